//! The one fan-out seam. Every parallel loop in the kernels goes through [`Par`], so the thread
//! policy (how many, or none at all) is decided in exactly one place.
//!
//! Without the `parallel` feature, or with `threads <= 1`, everything runs inline on the calling
//! thread. With it, work is split into contiguous, order-preserving chunks on scoped threads:
//! results are bit-identical for every thread count because nothing is ever reduced across
//! chunks.
//!
//! A `Par` may carry a cancel flag ([`Par::with_cancel`]): banded loops then work through each
//! chunk in a few smaller bands and look at the flag before each, so setting it from another
//! thread stops a running kernel within one small band. A kernel that saw it set returns
//! [`KernelError::Cancelled`] ([`Par::check`]) instead of its partial output.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::error::{KernelError, Result};

/// How many bands each thread's chunk is cut into when a cancel flag is set: the flag is read
/// before each, so a cancelled kernel stops within about an eighth of its per-thread work.
const CANCEL_BANDS: usize = 8;

/// How many threads a kernel call may use (the calling thread included), and the cancel flag
/// it watches, if any.
#[derive(Clone, Copy, Debug)]
pub struct Par<'a> {
    threads: usize,
    cancel: Option<&'a AtomicBool>,
}

impl PartialEq for Par<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.threads == other.threads
            && match (self.cancel, other.cancel) {
                (None, None) => true,
                (Some(a), Some(b)) => std::ptr::eq(a, b),
                _ => false,
            }
    }
}

impl Eq for Par<'_> {}

impl Default for Par<'_> {
    fn default() -> Self {
        Self::inline()
    }
}

impl<'a> Par<'a> {
    /// Run on the calling thread only.
    pub const fn inline() -> Self {
        Self {
            threads: 1,
            cancel: None,
        }
    }

    /// Use up to `threads` threads (0 and 1 both mean inline). Clamped to 1 when the crate is
    /// built without the `parallel` feature.
    pub fn new(threads: usize) -> Self {
        let threads = if cfg!(feature = "parallel") {
            threads.max(1)
        } else {
            1
        };
        Self {
            threads,
            cancel: None,
        }
    }

    /// The same thread budget, watching `flag`: once it is set (from any thread), banded
    /// loops skip their remaining bands and [`Par::check`] fails.
    pub fn with_cancel<'b>(&self, flag: &'b AtomicBool) -> Par<'b> {
        Par {
            threads: self.threads,
            cancel: Some(flag),
        }
    }

    /// The thread budget, at least 1 (1 = inline).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Whether the cancel flag is set (never, without one).
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// [`KernelError::Cancelled`] if the cancel flag is set: a kernel calls this after its
    /// banded loops (whose output is then incomplete) and between its stages.
    pub fn check(&self) -> Result<()> {
        if self.cancelled() {
            Err(KernelError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// `f(first, rows)` over `band` (whose first row is `first`) in up to [`CANCEL_BANDS`]
    /// smaller bands, each only if the cancel flag is still clear; without a flag, one call.
    fn run_band<T, F>(&self, first: usize, band: &mut [T], row_len: usize, f: &F)
    where
        F: Fn(usize, &mut [T]),
    {
        if self.cancel.is_none() {
            f(first, band);
            return;
        }
        let rows = band.len() / row_len;
        let per = rows.div_ceil(CANCEL_BANDS).max(1);
        for (k, part) in band.chunks_mut(per * row_len).enumerate() {
            if self.cancelled() {
                return;
            }
            f(first + k * per, part);
        }
    }

    /// Call `f(first_row, rows)` over `out` cut into bands of whole rows of `row_len` elements.
    pub fn for_each_band<T, F>(&self, out: &mut [T], row_len: usize, f: F)
    where
        T: Send,
        F: Fn(usize, &mut [T]) + Sync,
    {
        if row_len == 0 || out.is_empty() {
            return;
        }
        let rows = out.len() / row_len;
        let n = self.threads.min(rows).max(1);
        if n == 1 {
            self.run_band(0, out, row_len, &f);
            return;
        }
        self.spawn_bands(out, row_len, rows, n, &f);
    }

    /// Ordered map: `out[i] = f(i, &items[i])`.
    pub fn map<I, O, F>(&self, items: &[I], f: F) -> Vec<O>
    where
        I: Sync,
        O: Send,
        F: Fn(usize, &I) -> O + Sync,
    {
        let n = self.threads.min(items.len()).max(1);
        if n == 1 {
            return items.iter().enumerate().map(|(i, it)| f(i, it)).collect();
        }
        let mut slots: Vec<Option<O>> = (0..items.len()).map(|_| None).collect();
        self.spawn_bands(&mut slots, 1, items.len(), n, &|first: usize,
                                                          band: &mut [Option<
            O,
        >]| {
            for (k, slot) in band.iter_mut().enumerate() {
                *slot = Some(f(first + k, &items[first + k]));
            }
        });
        slots.into_iter().flatten().collect()
    }

    /// Producer/consumer overlap: `consume` starts at once on `threads - 1` threads of its own
    /// while the calling thread runs `produce`, then runs `consume` too. Inline (one thread),
    /// `produce` runs first and `consume` once after it. `consume` must return once the
    /// producer is done and no work is left (e.g. reading from a [`crate::feed::RowFeed`] the
    /// producer fills, which releases its readers when the producer drops its writer).
    pub fn pipeline<T, P, C>(&self, produce: P, consume: C) -> T
    where
        P: FnOnce() -> T,
        C: Fn() + Sync,
    {
        if self.threads <= 1 {
            let out = produce();
            consume();
            return out;
        }
        self.spawn_pipeline(produce, &consume)
    }

    /// [`Par::pipeline`] over a list of jobs: while the calling thread runs `produce` (e.g. a
    /// decode filling a [`crate::feed::RowFeed`] the jobs wait on), the other `threads - 1`
    /// claim `jobs` in their order, each job once, whichever thread is free taking the next
    /// (so list them top to bottom: the first to be claimed are the first whose rows arrive);
    /// then the calling thread joins them. Each thread makes its own state with `init` when it
    /// claims its first job and keeps it across the jobs it claims (buffers, a resize's rolling
    /// rows), so `run(state, job)` must give the same output whatever state it is handed.
    /// Inline, `produce` runs, then every job in order.
    ///
    /// No job is claimed after one has failed or once the cancel flag is set. Returns
    /// `produce`'s result and the jobs': the first error a job returned, else
    /// [`KernelError::Cancelled`] when the flag was set, else an error if any job was left
    /// unrun; `Ok` means every job ran to completion.
    pub fn pipeline_jobs<T, J, S, P, I, R>(
        &self,
        produce: P,
        jobs: Vec<J>,
        init: I,
        run: R,
    ) -> (T, Result<()>)
    where
        P: FnOnce() -> T,
        J: Send,
        I: Fn() -> S + Sync,
        R: Fn(&mut S, J) -> Result<()> + Sync,
    {
        let total = jobs.len();
        let slots: Vec<Mutex<Option<J>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let failed = OnceLock::<KernelError>::new();
        let consume = || {
            let mut state: Option<S> = None;
            while !self.cancelled() && failed.get().is_none() {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = slots.get(i) else { return };
                // Each index is claimed once, so the lock is never contended.
                let job = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                let Some(job) = job else { continue };
                let state = state.get_or_insert_with(&init);
                match run(state, job) {
                    Ok(()) => {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        let _ = failed.set(e);
                    }
                }
            }
        };
        let out = self.pipeline(produce, consume);
        let done = done.into_inner();
        let res = match failed.into_inner() {
            Some(e) => Err(e),
            None if self.cancelled() => Err(KernelError::Cancelled),
            None if done != total => Err(KernelError::InvalidArgument(format!(
                "{} of {total} jobs were left unrun",
                total - done
            ))),
            None => Ok(()),
        };
        (out, res)
    }

    #[cfg(feature = "parallel")]
    fn spawn_pipeline<T, P, C>(&self, produce: P, consume: &C) -> T
    where
        P: FnOnce() -> T,
        C: Fn() + Sync,
    {
        std::thread::scope(|s| {
            for _ in 1..self.threads {
                s.spawn(consume);
            }
            let out = produce();
            consume();
            out
        })
    }

    #[cfg(not(feature = "parallel"))]
    fn spawn_pipeline<T, P, C>(&self, produce: P, consume: &C) -> T
    where
        P: FnOnce() -> T,
        C: Fn() + Sync,
    {
        let out = produce();
        consume();
        out
    }

    #[cfg(feature = "parallel")]
    fn spawn_bands<T, F>(&self, out: &mut [T], row_len: usize, rows: usize, n: usize, f: &F)
    where
        T: Send,
        F: Fn(usize, &mut [T]) + Sync,
    {
        let per = rows.div_ceil(n);
        std::thread::scope(|s| {
            let mut chunks = out.chunks_mut(per * row_len).enumerate();
            // The calling thread takes the first band itself instead of idling.
            let first = chunks.next();
            for (k, chunk) in chunks {
                s.spawn(move || self.run_band(k * per, chunk, row_len, f));
            }
            if let Some((_, chunk)) = first {
                self.run_band(0, chunk, row_len, f);
            }
        });
    }

    #[cfg(not(feature = "parallel"))]
    fn spawn_bands<T, F>(&self, out: &mut [T], row_len: usize, _rows: usize, _n: usize, f: &F)
    where
        T: Send,
        F: Fn(usize, &mut [T]) + Sync,
    {
        self.run_band(0, out, row_len, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_preserves_order_for_every_thread_count() {
        let items: Vec<u32> = (0..37).collect();
        let want: Vec<u32> = items.iter().map(|x| x * 3).collect();
        for t in 0..6 {
            assert_eq!(Par::new(t).map(&items, |_, x| x * 3), want);
        }
    }

    #[test]
    fn pipeline_consumers_see_every_published_row() {
        use crate::feed::RowFeed;
        use std::sync::atomic::{AtomicUsize, Ordering};
        for t in 0..5 {
            let mut feed = RowFeed::new(vec![0u8; 50], 1);
            let (mut w, r) = feed.split();
            let next = AtomicUsize::new(0);
            let sum = AtomicUsize::new(0);
            let produced = Par::new(t).pipeline(
                move || {
                    for i in 0..50 {
                        w.unpublished_mut()[0].write(i as u8);
                        w.publish(i + 1);
                    }
                    7
                },
                || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(rows) = r.wait(i + 1) else { break };
                    sum.fetch_add(usize::from(rows[i]), Ordering::Relaxed);
                },
            );
            assert_eq!(produced, 7);
            assert_eq!(sum.load(Ordering::Relaxed), (0..50).sum::<usize>());
        }
    }

    #[test]
    fn pipeline_jobs_runs_every_job_once_and_stops_at_a_failure_or_the_flag() {
        use std::sync::atomic::AtomicUsize;
        for t in 0..5 {
            let hits: Vec<AtomicUsize> = (0..40).map(|_| AtomicUsize::new(0)).collect();
            let inits = AtomicUsize::new(0);
            let par = Par::new(t);
            let init = || inits.fetch_add(1, Ordering::Relaxed);
            let (out, res) = par.pipeline_jobs(
                || "produced",
                (0..40).collect(),
                init,
                |_state: &mut usize, i: usize| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                    Ok(())
                },
            );
            assert_eq!((out, res.is_ok()), ("produced", true));
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "{t}");
            // One state per thread that claimed a job, at most.
            assert!(inits.load(Ordering::Relaxed) <= par.threads());
            let (_, res) = par.pipeline_jobs(
                || (),
                (0..40).collect(),
                || (),
                |_, i: usize| {
                    if i == 3 {
                        Err(KernelError::InvalidArgument("job 3".into()))
                    } else {
                        Ok(())
                    }
                },
            );
            assert_eq!(res.unwrap_err().to_string(), "job 3");
            let flag = AtomicBool::new(false);
            let watched = par.with_cancel(&flag);
            let (_, res) = watched.pipeline_jobs(
                || (),
                (0..40).collect(),
                || (),
                |_, i: usize| {
                    if i == 5 {
                        flag.store(true, Ordering::Relaxed);
                    }
                    Ok(())
                },
            );
            assert!(matches!(res, Err(KernelError::Cancelled)), "{t}");
        }
    }

    #[test]
    fn a_set_flag_stops_the_bands_and_check_fails() {
        use std::sync::atomic::AtomicUsize;
        for t in 1..5 {
            let flag = AtomicBool::new(false);
            let par = Par::new(t).with_cancel(&flag);
            let calls = AtomicUsize::new(0);
            let mut buf = vec![0usize; 64 * 2];
            par.for_each_band(&mut buf, 2, |first, band| {
                calls.fetch_add(1, Ordering::Relaxed);
                flag.store(true, Ordering::Relaxed); // as another thread would, mid-kernel
                for (r, row) in band.chunks_mut(2).enumerate() {
                    row.fill(first + r + 1);
                }
            });
            // Each thread ran at most the band it was in when the flag was set.
            assert!(
                calls.load(Ordering::Relaxed) <= par.threads(),
                "{t} threads"
            );
            assert!(buf.contains(&0));
            assert!(matches!(par.check(), Err(KernelError::Cancelled)));
        }
    }

    #[test]
    fn a_clear_flag_changes_nothing() {
        for t in 0..5 {
            let flag = AtomicBool::new(false);
            let mut plain = vec![0usize; 37 * 3];
            let mut watched = plain.clone();
            let fill = |first: usize, band: &mut [usize]| {
                for (r, row) in band.chunks_mut(3).enumerate() {
                    row.fill(first + r + 1);
                }
            };
            Par::new(t).for_each_band(&mut plain, 3, fill);
            let par = Par::new(t).with_cancel(&flag);
            par.for_each_band(&mut watched, 3, fill);
            assert_eq!(plain, watched);
            assert!(par.check().is_ok());
        }
    }

    #[test]
    fn bands_cover_every_row_once() {
        for t in 0..5 {
            let mut buf = vec![0usize; 7 * 4];
            Par::new(t).for_each_band(&mut buf, 4, |first, band| {
                for (r, row) in band.chunks_mut(4).enumerate() {
                    row.fill(first + r + 1);
                }
            });
            let rows: Vec<usize> = buf.chunks(4).map(|r| r[0]).collect();
            assert_eq!(rows, (1..=7).collect::<Vec<_>>());
        }
    }
}
