//! A row buffer that one producer fills top to bottom while consumers already read the rows it
//! has published, so a decoder and the passes after it can overlap (see [`crate::Par::pipeline`]).
//!
//! The producer ([`RowWriter`]) only ever writes rows at or after the published count; readers
//! ([`RowReader`]) only ever see rows before it. When the writer goes away without publishing
//! every row (an error, a panic), waiting readers are released with `None` instead of hanging.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{KernelError, Result};

/// How long a reader waits for rows on its core before it sleeps.
const SPIN: std::time::Duration = std::time::Duration::from_micros(300);

/// `rows` rows of `row_bytes` bytes, published in order.
pub struct RowFeed {
    ptr: *mut u8,
    len: usize,
    cap: usize,
    row_bytes: usize,
    rows: usize,
    /// Rows published so far (read lock-free by readers that need no wait).
    published: AtomicUsize,
    /// Whether the writer is gone (read lock-free by spinning readers).
    closed: AtomicBool,
    /// Readers waiting on their core (at most one at a time spins).
    spinning: AtomicUsize,
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Default)]
struct State {
    published: usize,
    closed: bool,
    /// Readers blocked in `wait`: only then does a publication wake anyone (a wake-up is a
    /// system call, and most publications find every reader busy or none at all).
    waiting: usize,
}

// SAFETY: the feed owns its buffer; shared access follows the protocol above (writes only to
// unpublished rows through the one `RowWriter`, reads only of published rows, publication
// ordered by a release store and the mutex).
unsafe impl Send for RowFeed {}
// SAFETY: as above.
unsafe impl Sync for RowFeed {}

impl RowFeed {
    /// A feed over `buf`, which holds `buf.len() / row_bytes` whole rows, none published yet
    /// (the writer overwrites them).
    pub fn new(buf: Vec<u8>, row_bytes: usize) -> Self {
        let rows = buf.len().checked_div(row_bytes).unwrap_or(0);
        let len = buf.len();
        Self::over(buf, len, rows, row_bytes)
    }

    /// A feed of `rows` rows of `row_bytes` bytes whose buffer is not filled in (a decoder
    /// writes every row before publishing it, so zeroing it first would be wasted); a
    /// `KernelError::Limit` when it cannot be allocated.
    pub(crate) fn unfilled(rows: usize, row_bytes: usize) -> Result<Self> {
        let len = rows
            .checked_mul(row_bytes)
            .ok_or_else(|| KernelError::Limit(format!("{rows} rows of {row_bytes} bytes")))?;
        let mut buf: Vec<u8> = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| {
            KernelError::Limit(format!("cannot allocate {len} bytes for the image"))
        })?;
        Ok(Self::over(buf, len, rows, row_bytes))
    }

    /// A feed of the first `len` bytes of `buf`'s allocation (`len <=` its capacity).
    fn over(buf: Vec<u8>, len: usize, rows: usize, row_bytes: usize) -> Self {
        let mut buf = std::mem::ManuallyDrop::new(buf);
        Self {
            ptr: buf.as_mut_ptr(),
            len,
            cap: buf.capacity(),
            row_bytes,
            rows,
            published: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            spinning: AtomicUsize::new(0),
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        }
    }

    /// A feed whose rows are all there already.
    pub fn complete(buf: Vec<u8>, row_bytes: usize) -> Self {
        let feed = Self::new(buf, row_bytes);
        feed.published.store(feed.rows, Ordering::Release);
        feed.lock().published = feed.rows;
        feed
    }

    /// Rows of the image the feed carries.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    /// The one writer and a reader (copy it freely). Borrowing the feed mutably makes the writer
    /// unique.
    pub fn split(&mut self) -> (RowWriter<'_>, RowReader<'_>) {
        let this: &Self = self;
        (RowWriter { feed: this }, RowReader { feed: this })
    }

    /// The whole buffer, once every row is published.
    pub fn into_vec(self) -> Option<Vec<u8>> {
        if self.published.load(Ordering::Acquire) < self.rows {
            return None;
        }
        let mut this = self;
        let (ptr, len, cap) = (this.ptr, this.len, this.cap);
        // Leave an empty buffer behind for `Drop`.
        this.ptr = std::ptr::NonNull::<u8>::dangling().as_ptr();
        (this.len, this.cap) = (0, 0);
        // SAFETY: `ptr`, `len`, `cap` came from a `Vec<u8>` that nothing else owns, and the
        // feed no longer refers to it; every row is published, so every byte was written.
        Some(unsafe { Vec::from_raw_parts(ptr, len, cap) })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bytes(&self, rows: usize) -> &[u8] {
        // SAFETY: `rows <= self.rows`, so the range is inside the buffer; callers only ask for
        // published rows, which the writer never touches again.
        unsafe { std::slice::from_raw_parts(self.ptr, rows * self.row_bytes) }
    }
}

impl Drop for RowFeed {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `cap` describe the allocation of a `Vec<u8>` owned by the feed alone
        // (an empty dangling one after `into_vec`); it is rebuilt empty, as rows never written
        // may not be initialised, and bytes need no drop of their own.
        drop(unsafe { Vec::from_raw_parts(self.ptr, 0, self.cap) });
    }
}

/// The producer side: fills rows in order and publishes them.
pub struct RowWriter<'a> {
    feed: &'a RowFeed,
}

impl RowWriter<'_> {
    /// Rows of the image the feed carries.
    pub fn rows(&self) -> usize {
        self.feed.rows
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.feed.row_bytes
    }

    /// Rows published so far.
    pub fn published(&self) -> usize {
        self.feed.published.load(Ordering::Relaxed)
    }

    /// The rows not yet published, to be written in place (they may hold anything, or
    /// nothing yet: write a row whole before publishing it).
    pub fn unpublished_mut(&mut self) -> &mut [MaybeUninit<u8>] {
        let p = self.published();
        let start = p * self.feed.row_bytes;
        let n = (self.feed.rows - p) * self.feed.row_bytes;
        // SAFETY: rows `p..` are inside the buffer and no reader sees them until a later
        // `publish`, which needs this borrow to have ended.
        unsafe { std::slice::from_raw_parts_mut(self.feed.ptr.add(start).cast(), n) }
    }

    /// The start of the buffer, for a foreign decoder writing rows in place. Whoever writes
    /// through it must only touch rows at or after [`Self::published`].
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.feed.ptr
    }

    /// Bytes in the whole buffer.
    pub fn len(&self) -> usize {
        self.feed.rows * self.feed.row_bytes
    }

    /// True when the buffer holds no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Publish rows `..upto` (clamped to the feed; never moves backwards): every byte of them
    /// must have been written.
    pub fn publish(&mut self, upto: usize) {
        let upto = upto.min(self.feed.rows);
        let mut st = self.feed.lock();
        if upto > st.published {
            st.published = upto;
            self.feed.published.store(upto, Ordering::Release);
            let waiting = st.waiting > 0;
            drop(st);
            if waiting {
                self.feed.cv.notify_all();
            }
        }
    }
}

impl Drop for RowWriter<'_> {
    fn drop(&mut self) {
        // Rows never published now never will be: release every waiting reader.
        let mut st = self.feed.lock();
        st.closed = true;
        self.feed.closed.store(true, Ordering::Release);
        let waiting = st.waiting > 0;
        drop(st);
        if waiting {
            self.feed.cv.notify_all();
        }
    }
}

/// The consumer side; `Copy`, shareable across threads.
#[derive(Clone, Copy)]
pub struct RowReader<'a> {
    feed: &'a RowFeed,
}

impl<'a> RowReader<'a> {
    /// Rows of the image the feed carries.
    pub fn rows(&self) -> usize {
        self.feed.rows
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.feed.row_bytes
    }

    /// Rows `..rows` once they are published (blocking until then), or `None` when they never
    /// will be (the writer is gone, or `rows` is past the end).
    pub fn wait(&self, rows: usize) -> Option<&'a [u8]> {
        let feed = self.feed;
        if rows > feed.rows {
            return None;
        }
        if feed.published.load(Ordering::Acquire) >= rows {
            return Some(feed.bytes(rows));
        }
        // The next batch of rows is usually a fraction of a millisecond away: one reader at a
        // time waits for it on its core rather than sleep, so that it is not woken up
        // elsewhere (or queued behind another process on the producer's core); the others
        // sleep at once, so a wide pool does not burn its cores while the decode is the
        // bottleneck.
        if feed.spinning.fetch_add(1, Ordering::AcqRel) == 0 {
            let start = std::time::Instant::now();
            let mut got = false;
            while start.elapsed() < SPIN {
                // Yielding rather than spinning hard: should the producer share this core, it
                // runs.
                std::thread::yield_now();
                got = feed.published.load(Ordering::Acquire) >= rows;
                if got || feed.closed.load(Ordering::Acquire) {
                    break; // closed: the locked check below gives the answer
                }
            }
            feed.spinning.fetch_sub(1, Ordering::AcqRel);
            if got {
                return Some(feed.bytes(rows));
            }
        } else {
            feed.spinning.fetch_sub(1, Ordering::AcqRel);
        }
        let mut st = feed.lock();
        while st.published < rows {
            if st.closed {
                return None;
            }
            // Counted under the lock the writer takes to publish, so no wake-up is missed.
            st.waiting += 1;
            st = feed.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            st.waiting -= 1;
        }
        Some(feed.bytes(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_arrive_in_order_and_a_closed_feed_releases_readers() {
        let mut feed = RowFeed::new(vec![0u8; 12], 3);
        let (mut w, r) = feed.split();
        assert_eq!(r.rows(), 4);
        w.unpublished_mut()[..6].write_copy_of_slice(&[1, 1, 1, 2, 2, 2]);
        w.publish(2);
        assert_eq!(r.wait(2), Some(&[1u8, 1, 1, 2, 2, 2][..]));
        assert_eq!(r.wait(5), None);
        drop(w);
        assert_eq!(r.wait(3), None);
        assert!(feed.into_vec().is_none());
        let done = RowFeed::complete(vec![7u8; 6], 3);
        assert_eq!(done.into_vec(), Some(vec![7u8; 6]));
    }
}
