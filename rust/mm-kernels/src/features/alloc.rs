//! Output buffers of the writers: reserved uninitialised (a failed reservation is an error,
//! not an abort), advised onto transparent huge pages when large, and for float32 features
//! taken from a small pool of recently released buffers.
//!
//! A float32 feature is fresh memory every time (50 MB for a 1080p Qwen2 image, 290 MB for
//! 12 MP): the OS must fault in and zero every page before the writer fills it, which costs
//! about a quarter of the item. A server turns outputs over at a steady pace, so the buffer of
//! the tensor just released ([`give_f32`], which a binding calls when its array is freed) is
//! taken again for the next one. Bounded: at most 8 buffers and 512 MiB in all
//! are kept, and a buffer is only reused for an output of at least half its size.
//!
//! Measured (one Qwen2-VL item on one thread, `Pipeline.process` of a JPEG, medians of
//! interleaved runs on a shared 2-core Xeon): into fresh pages, plain stores with the huge-page
//! advice 151 ms at 12 MP (292 MB), non-temporal ones 177 ms, and without the advice 214 / 286
//! ms (1080p, 50 MB: 31.7 / 36.2, without the advice 42.7 / 57.1); into a reused buffer,
//! non-temporal stores 106 ms against 144 with plain ones (1080p: 22.5 / 32.0). Hence plain
//! stores and the advice for fresh buffers, streamed stores for reused ones ([`Store`]). The
//! channel-plane writers (InternVL, Gemma 3, Pixtral) showed no difference between the two on
//! reused buffers (1080p and 12 MP), so they keep plain stores.

use std::mem::MaybeUninit;
use std::sync::Mutex;

use crate::error::{KernelError, Result};

/// Buffers kept at most.
const SLOTS: usize = 8;
/// Bytes kept at most (one 12-megapixel Qwen2 output fits).
const MAX_BYTES: usize = 512 << 20;
/// Buffers smaller than this are left to the allocator (they fault little).
const MIN_BYTES: usize = 8 << 20;
/// Huge pages are 2 MiB on x86-64 and most arm64 kernels.
const HUGE: usize = 2 << 20;

static POOL: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());

/// How the writer should store into a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// Plain stores, for fresh pages: the OS has just zeroed them, so their lines are mostly
    /// in cache already.
    Cached,
    /// Non-temporal stores: a reused buffer is cold, and streaming skips reading each line in
    /// first. (On fresh pages they are slower: the zeroed lines must be evicted first.)
    Streamed,
}

/// An empty vector with room for `len` elements; `what` names the tensor in the error.
pub fn reserve<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| KernelError::Limit(format!("{what} of {len} elements cannot be allocated")))?;
    advise(&mut out.spare_capacity_mut()[..len]);
    Ok(out)
}

/// [`reserve`] for float32, from the pool when a kept buffer fits (then [`Store::Streamed`]).
pub fn reserve_f32(len: usize, what: &str) -> Result<(Vec<f32>, Store)> {
    if let Some(mut kept) = take(len) {
        advise(&mut kept.spare_capacity_mut()[..len]);
        return Ok((kept, Store::Streamed));
    }
    Ok((reserve(len, what)?, Store::Cached))
}

fn bytes(v: &Vec<f32>) -> usize {
    v.capacity() * std::mem::size_of::<f32>()
}

/// An empty kept vector with room for `need` floats, if one fits.
fn take(need: usize) -> Option<Vec<f32>> {
    let mut pool = POOL.lock().ok()?;
    let fits = |v: &Vec<f32>| v.capacity() >= need && v.capacity() / 2 <= need;
    let k = pool.iter().position(fits)?;
    let mut v = pool.swap_remove(k);
    v.clear();
    Some(v)
}

/// Keep `v` for a later output, if the budget allows (the oldest buffers make room).
pub fn give_f32(v: Vec<f32>) {
    let size = bytes(&v);
    if !(MIN_BYTES..=MAX_BYTES).contains(&size) {
        return;
    }
    let Ok(mut pool) = POOL.lock() else {
        return;
    };
    pool.push(v);
    while pool.len() > SLOTS || pool.iter().map(bytes).sum::<usize>() > MAX_BYTES {
        pool.remove(0);
    }
}

/// Advise huge pages for the 2 MiB-aligned interior of `buf` (nothing for small buffers):
/// with THP in `madvise` mode (the common default) one call cuts the page faults 512-fold.
/// Purely an optimisation: if the kernel says no, nothing changes.
fn advise<T>(buf: &mut [MaybeUninit<T>]) {
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

/// Copies into the output that bypass the cache: the tensor is far larger than any cache and
/// is not read again here, so non-temporal stores save the read-for-ownership of every line.
pub(crate) mod stream {
    use std::mem::MaybeUninit;

    /// `dst = src` (same length).
    #[inline]
    pub(crate) fn copy(dst: &mut [MaybeUninit<f32>], src: &[f32]) {
        assert_eq!(dst.len(), src.len());
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_loadu_ps, _mm_stream_ps};
            // Plain stores up to the first 16-byte boundary, streamed ones after it.
            let head = dst.as_ptr().align_offset(16).min(dst.len());
            if head < 4 {
                let (d0, d1) = dst.split_at_mut(head);
                let (s0, s1) = src.split_at(head);
                d0.write_copy_of_slice(s0);
                let mut d = d1.chunks_exact_mut(4);
                let mut s = s1.chunks_exact(4);
                for (dc, sc) in (&mut d).zip(&mut s) {
                    // SAFETY: SSE is part of x86-64; `dc` starts on a 16-byte boundary (`d1`
                    // does, and every chunk is 16 bytes further) and holds four floats, as
                    // does `sc`.
                    unsafe { _mm_stream_ps(dc.as_mut_ptr().cast(), _mm_loadu_ps(sc.as_ptr())) };
                }
                d.into_remainder().write_copy_of_slice(s.remainder());
                return;
            }
        }
        dst.write_copy_of_slice(src);
    }

    /// Order the streamed stores before anything that follows (e.g. handing the band over).
    #[inline]
    pub(crate) fn fence() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE is part of x86-64; a store fence has no other effect.
        unsafe {
            std::arch::x86_64::_mm_sfence()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_is_bounded_by_size() {
        let v: Vec<f32> = Vec::with_capacity(4 << 20);
        let ptr = v.as_ptr();
        give_f32(v);
        // Far smaller outputs do not take it; one that fits does, empty.
        assert!(take(1 << 20).is_none());
        let again = take(3 << 20).unwrap();
        assert_eq!((again.as_ptr(), again.len()), (ptr, 0));
        // Too large to keep.
        give_f32(Vec::with_capacity(MAX_BYTES / 4 + 1));
        assert!(take(MAX_BYTES / 4 + 1).is_none());
    }

    /// Streamed copies at every alignment and length land exactly where plain ones do.
    #[test]
    fn streamed_copy_at_any_alignment() {
        let src: Vec<f32> = (0..40).map(|v| v as f32).collect();
        for off in 0..5 {
            for len in [0, 1, 3, 4, 5, 17, 35] {
                let mut buf = [MaybeUninit::new(-1f32); 41];
                stream::copy(&mut buf[off..off + len], &src[..len]);
                stream::fence();
                // SAFETY: every element was initialised to -1 above.
                let got: Vec<f32> = buf.iter().map(|v| unsafe { v.assume_init() }).collect();
                let mut want = vec![-1f32; 41];
                want[off..off + len].copy_from_slice(&src[..len]);
                assert_eq!(got, want, "offset {off} len {len}");
            }
        }
    }

    #[test]
    fn a_huge_reservation_is_an_error() {
        assert!(reserve::<f32>(usize::MAX / 8, "test tensor").is_err());
    }
}
