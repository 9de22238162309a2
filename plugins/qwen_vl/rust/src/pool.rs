//! A few recently released output buffers, kept for the next image.
//!
//! A `pixel_values` tensor is fresh memory every time (50 MB for 1080p, 290 MB for 12 MP): the
//! kernel must fault in and zero every page before the kernel writes it, which costs about a
//! quarter of the whole item. A server turns outputs over at a steady pace, so the buffer of
//! the tensor just released is taken again for the next one. Bounded: at most [`SLOTS`]
//! buffers and [`MAX_BYTES`] in all are retained; a buffer is only reused for an output of at
//! least half its size, so a small image never pins a huge one.

use std::sync::Mutex;

/// Buffers kept at most.
const SLOTS: usize = 8;
/// Bytes kept at most (one 12-megapixel Qwen2 output fits).
const MAX_BYTES: usize = 512 << 20;
/// Buffers smaller than this are left to the allocator (they fault little).
const MIN_BYTES: usize = 8 << 20;

static POOL: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());

fn bytes(v: &Vec<f32>) -> usize {
    v.capacity() * std::mem::size_of::<f32>()
}

/// An empty kept vector with room for `need` floats, if one fits.
pub fn take(need: usize) -> Option<Vec<f32>> {
    let mut pool = POOL.lock().ok()?;
    let fits = |v: &Vec<f32>| v.capacity() >= need && v.capacity() / 2 <= need;
    let k = pool.iter().position(fits)?;
    let mut v = pool.swap_remove(k);
    v.clear();
    Some(v)
}

/// Keep `v` for a later [`take`], if the budget allows (the oldest buffers make room).
pub fn give(v: Vec<f32>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_is_bounded_by_size() {
        let v: Vec<f32> = Vec::with_capacity(4 << 20);
        let ptr = v.as_ptr();
        give(v);
        // Far smaller outputs do not take it; one that fits does, empty.
        assert!(take(1 << 20).is_none());
        let again = take(3 << 20).unwrap();
        assert_eq!((again.as_ptr(), again.len()), (ptr, 0));
        // Too large to keep.
        give(Vec::with_capacity(MAX_BYTES / 4 + 1));
        assert!(take(MAX_BYTES / 4 + 1).is_none());
    }
}
