//! The writers while the image is still being decoded: each writer cuts its output into small
//! jobs, and [`run`] hands them out in the order their input rows arrive, on every thread of
//! the `par` seam, while the calling thread decodes ([`Par::pipeline_jobs`]). A job waits for
//! the rows it reads ([`super::parts::Source::rows`] on a fed image), so the output is the one
//! the writer makes of the whole image, for any thread count and any timing.

use std::mem::MaybeUninit;

use crate::error::Result;
use crate::par::Par;

/// A job over a run of a writer's output: the index of its first row (in the writer's unit:
/// a block row, a patch row) and the run's elements.
pub(crate) type Run<'o, T> = (usize, &'o mut [MaybeUninit<T>]);

/// Run `jobs`, each given with the number of image rows it reads, in that order (stably, so
/// jobs reading the same rows keep the writer's order), alongside `produce` (the decode). The
/// decode's error comes first: a job that stopped waiting for rows failed because of it.
pub(crate) fn run<J, S, P, I, R>(
    par: &Par,
    produce: P,
    mut jobs: Vec<(usize, J)>,
    init: I,
    job: R,
) -> Result<()>
where
    P: FnOnce() -> Result<()>,
    J: Send,
    I: Fn() -> S + Sync,
    R: Fn(&mut S, J) -> Result<()> + Sync,
{
    jobs.sort_by_key(|&(need, _)| need);
    let jobs = jobs.into_iter().map(|(_, j)| j).collect();
    let (decoded, ran) = par.pipeline_jobs(produce, jobs, init, job);
    decoded?;
    ran
}
