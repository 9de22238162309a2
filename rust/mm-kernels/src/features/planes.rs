//! Channel planes (CHW): each part's pixels as three planes, whole (`[3, H, W]`: Pixtral,
//! CLIP, one Gemma 3 crop) or cut into `T x T` tiles in row-major order (`[tiles, 3, T, T]`:
//! InternVL's canvas and thumbnail). A whole part is one tile of its own size, so both are
//! one walk.
//!
//! The output is split into jobs, each a band of rows of one tile row of one part: a job owns
//! the band's rows of each of its tiles' three planes (disjoint slices), resizes those rows and
//! scatters every pixel into its three planes in one pass. Jobs run through the `par` seam;
//! the result does not depend on how many threads ran them.

use std::mem::MaybeUninit;
use std::sync::Mutex;

use super::encode::Encode;
use super::fed;
use super::parts::{Band, Source};
use crate::error::{KernelError, Result};
use crate::par::Par;

/// Output rows resized per step: a few hundred KB of band, cache resident.
const STEP_ROWS: usize = 16;
/// Rows per job while the image is still being decoded: small enough that the first jobs can
/// start while the top of the image is all there is.
const STREAM_ROWS: usize = 32;

/// One job: rows `a..b` of tile row `row` of part `part`; `pieces[col * 3 + ch]` receives
/// those rows of channel `ch` of the tile in column `col`.
struct Job<'o, T> {
    part: usize,
    row: usize,
    a: usize,
    b: usize,
    pieces: Vec<&'o mut [MaybeUninit<T>]>,
}

/// The tile size of each part: `tile` when given (every part's extent must then be a
/// multiple of it), else the part's whole extent.
fn tile_of(src: &Source<'_>, tile: Option<usize>) -> Result<(usize, usize)> {
    let (w, h) = src.extent;
    match tile {
        None => Ok((w, h)),
        Some(t) if t > 0 && w % t == 0 && h % t == 0 => Ok((t, t)),
        Some(t) => Err(KernelError::InvalidArgument(format!(
            "a {w}x{h} part is not a whole number of {t}x{t} tiles"
        ))),
    }
}

/// Every part of `sources` must be a whole number of `tile x tile` tiles.
pub(crate) fn check_tiles(sources: &[Source<'_>], tile: usize) -> Result<()> {
    tiles_of(sources, Some(tile)).map(|_| ())
}

/// Elements the planes of `sources` take.
pub(crate) fn len(sources: &[Source<'_>]) -> Result<usize> {
    let overflow = || KernelError::Limit("the feature's size overflows".into());
    sources.iter().try_fold(0usize, |acc, s| {
        let (w, h) = s.extent;
        w.checked_mul(h)
            .and_then(|p| p.checked_mul(3))
            .and_then(|p| acc.checked_add(p))
            .ok_or_else(overflow)
    })
}

/// The jobs that write the planes of every part in `sources` into `out` (exactly [`len`]
/// elements), tiles of `tile` when given, each tile row cut into bands of at most `per_band`
/// rows (`None`: enough bands per tile row that each of `par`'s threads has a job). Every
/// element of `out` belongs to exactly one job.
fn jobs<'o, T>(
    sources: &[Source<'_>],
    tiles: &[(usize, usize)],
    per_band: Option<usize>,
    par: &Par,
    out: &'o mut [MaybeUninit<T>],
) -> Result<Vec<Job<'o, T>>> {
    let tile_rows: usize = sources
        .iter()
        .zip(tiles)
        .map(|(s, &(_, th))| s.extent.1 / th)
        .sum();
    let bands = par.threads().div_ceil(tile_rows.max(1)).max(1);
    let mut jobs: Vec<Job<'o, T>> = Vec::new();
    let mut rest = out;
    for (p, (src, &(tw, th))) in sources.iter().zip(tiles).enumerate() {
        let (w, h) = src.extent;
        let (cols, rows) = (w / tw, h / th);
        let per = per_band.map_or(th.div_ceil(bands), |n| n.clamp(1, th.max(1)));
        for r in 0..rows {
            let (row, tail) = std::mem::take(&mut rest).split_at_mut(cols * 3 * tw * th);
            rest = tail;
            let first = jobs.len();
            let n = th.div_ceil(per);
            for k in 0..n {
                let (a, b) = (k * per, ((k + 1) * per).min(th));
                jobs.push(Job {
                    part: p,
                    row: r,
                    a,
                    b,
                    pieces: Vec::with_capacity(cols * 3),
                });
            }
            for plane in row.chunks_exact_mut(tw * th) {
                for (k, piece) in plane.chunks_mut(per * tw).enumerate() {
                    jobs[first + k].pieces.push(piece);
                }
            }
        }
    }
    Ok(jobs)
}

fn tiles_of(sources: &[Source<'_>], tile: Option<usize>) -> Result<Vec<(usize, usize)>> {
    sources.iter().map(|s| tile_of(s, tile)).collect()
}

/// Write the planes of every part in `sources` into `out` (exactly [`len`] elements), tiles
/// of `tile` when given. Every element of `out` is written.
pub(crate) fn write<E: Encode>(
    sources: &[Source<'_>],
    tile: Option<usize>,
    enc: &E,
    par: &Par,
    out: &mut [MaybeUninit<E::Out>],
) -> Result<()> {
    let tiles = tiles_of(sources, tile)?;
    let jobs: Vec<Mutex<Job<'_, E::Out>>> = jobs(sources, &tiles, None, par, out)?
        .into_iter()
        .map(Mutex::new)
        .collect();
    let results = par.map(&jobs, |_, slot| -> Result<()> {
        let mut job = slot.lock().map_err(|_| poisoned())?;
        let job: &mut Job<'_, E::Out> = &mut job;
        let src = &sources[job.part];
        fill(src, tiles[job.part], job, enc, &mut Band::default())
    });
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(())
}

/// [`write`] while the image's rows are still arriving: bands of [`STREAM_ROWS`] rows, run
/// through [`fed::run`] alongside `produce` in the order their rows arrive.
pub(crate) fn write_streamed<E: Encode, P: FnOnce() -> Result<()>>(
    sources: &[Source<'_>],
    tile: Option<usize>,
    enc: &E,
    par: &Par,
    out: &mut [MaybeUninit<E::Out>],
    produce: P,
) -> Result<()> {
    let tiles = tiles_of(sources, tile)?;
    let jobs: Vec<(usize, Job<'_, E::Out>)> = jobs(sources, &tiles, Some(STREAM_ROWS), par, out)?
        .into_iter()
        .map(|job| {
            let src = &sources[job.part];
            let (_, th) = tiles[job.part];
            let kh = src.kept().1;
            let (top, bottom) = (job.row * th + job.a, (job.row * th + job.b).min(kh));
            let need = if top < bottom {
                src.need(top, bottom)
            } else {
                0
            };
            (need, job)
        })
        .collect();
    let bands = || -> Vec<Band> { sources.iter().map(|_| Band::default()).collect() };
    fed::run(
        par,
        produce,
        jobs,
        bands,
        |bands: &mut Vec<Band>, mut job: Job<'_, E::Out>| {
            let p = job.part;
            fill(&sources[p], tiles[p], &mut job, enc, &mut bands[p])
        },
    )
}

fn poisoned() -> KernelError {
    KernelError::InvalidArgument("a feature worker panicked".to_string())
}

/// Rows `job.a..job.b` of tile row `job.row`: resized a step at a time, scattered to planes.
fn fill<E: Encode>(
    src: &Source<'_>,
    (tw, th): (usize, usize),
    job: &mut Job<'_, E::Out>,
    enc: &E,
    band: &mut Band,
) -> Result<()> {
    let (kw, kh) = src.kept();
    let cols = src.extent.0 / tw;
    let pad = [enc.pad(0), enc.pad(1), enc.pad(2)];
    let y0 = job.row * th;
    let mut y = job.a;
    while y < job.b {
        let top = y0 + y;
        if top >= kh {
            // Below the kept pixels: padding only.
            for (i, piece) in job.pieces.iter_mut().enumerate() {
                for d in &mut piece[(y - job.a) * tw..(job.b - job.a) * tw] {
                    d.write(pad[i % 3]);
                }
            }
            break;
        }
        let n = STEP_ROWS.min(job.b - y).min(kh - top);
        let rows = src.rows(top, top + n, band)?;
        for k in 0..n {
            let line = rows.row(k);
            let yy = y - job.a + k;
            for c in 0..cols {
                let x0 = c * tw;
                let inside = kw.saturating_sub(x0).min(tw);
                let px = &line[x0 * 3..(x0 + inside) * 3];
                let [p0, p1, p2] = &mut job.pieces[c * 3..c * 3 + 3] else {
                    unreachable!("three planes per tile")
                };
                let (at, end) = (yy * tw, (yy + 1) * tw);
                let (q0, q1, q2) = (&mut p0[at..end], &mut p1[at..end], &mut p2[at..end]);
                enc.encode_planes(
                    px,
                    [&mut q0[..inside], &mut q1[..inside], &mut q2[..inside]],
                );
                for (q, v) in [q0, q1, q2].into_iter().zip(pad) {
                    for d in &mut q[inside..] {
                        d.write(v);
                    }
                }
            }
        }
        y += n;
    }
    Ok(())
}
