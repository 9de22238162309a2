//! Ask Linux for transparent huge pages on a large, freshly allocated output buffer.
//!
//! A Qwen `pixel_values` tensor is 24 bytes per resized pixel (50 MB for 1080p), and it is
//! always fresh memory: faulting it in 4 KiB at a time costs as much as writing it. With THP in
//! `madvise` mode (the common default) one advice call cuts the faults 512-fold. Purely an
//! optimisation: if the kernel says no, nothing changes.

const HUGE: usize = 2 << 20;

/// Advise huge pages for the 2 MiB-aligned interior of `buf` (nothing for small buffers).
pub fn advise<T>(buf: &mut [T]) {
    let bytes = std::mem::size_of_val(buf);
    if bytes < 4 * HUGE {
        return;
    }
    let start = buf.as_mut_ptr() as usize;
    let first = start.next_multiple_of(HUGE);
    let last = (start + bytes) / HUGE * HUGE;
    if last > first {
        advise_range(first, last - first);
    }
}

#[cfg(target_os = "linux")]
fn advise_range(addr: usize, len: usize) {
    // SAFETY: the range lies inside a live allocation we hold mutably; MADV_HUGEPAGE only
    // changes how the kernel backs those pages, never their contents or validity.
    unsafe {
        libc::madvise(addr as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_addr: usize, _len: usize) {}
