//! Patch rows with a temporal repeat: HuggingFace's Qwen2-VL `pixel_values` layout, written
//! straight from resized bands (no 9-D intermediate). Row `r` is the patch at merge block
//! `(bh, bw)`, in-block `(mh, mw)`: `r = ((bh * (gw/m) + bw) * m + mh) * m + mw`; column
//! `k = ((c * tps + tt) * ps + py) * ps + px`, each still frame repeated `tps` times. The
//! compact form holds each frame once: `k = (c * ps + py) * ps + px`.
//!
//! The rows of one merge-block row (`ps * m` image rows) are a contiguous run of the output,
//! so the work is cut into block rows, fanned out through the `par` seam; each thread resizes
//! a few block rows at a time into a cache-resident band and writes their patches at once.

use std::mem::MaybeUninit;
use std::sync::OnceLock;

use super::alloc::{stream, Store};
use super::encode::{Encode, Scatter};
use super::fed;
use super::parts::{Band, Rows, Source};
use super::simd::split_planes;
use crate::error::{KernelError, Result};
use crate::par::Par;

/// Image rows resized per step, at least (rounded up to whole merge-block rows).
const STEP_ROWS: usize = 48;

/// The patch geometry of a Qwen-style vision tower.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Patching {
    /// Patch side in pixels.
    pub patch_size: usize,
    /// Patches merged per side into one token.
    pub merge_size: usize,
    /// Frames per patch (a still image is repeated).
    pub temporal_patch_size: usize,
}

impl Patching {
    /// Elements per output row of the full form: `3 * tps * ps * ps`.
    pub fn row_len(&self) -> Result<usize> {
        self.patch_size
            .checked_mul(self.patch_size)
            .and_then(|p| p.checked_mul(self.temporal_patch_size))
            .and_then(|p| p.checked_mul(3))
            .ok_or_else(|| KernelError::InvalidArgument("patch geometry overflows".into()))
    }
}

/// The checked output geometry of one image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Grid {
    pub(crate) gh: usize,
    pub(crate) gw: usize,
    /// Image rows (and columns) per merge block: `ps * m`.
    unit: usize,
    /// Elements per output row (full form: `3 * tps * ps * ps`; codes: `3 * ps * ps`).
    row_len: usize,
    /// Elements per merge-block row of the output.
    block_row_len: usize,
    total: usize,
}

impl Grid {
    /// The grid of a `width x height` image, whose sides must be multiples of `ps * m`;
    /// `codes` sizes the compact form (frames once).
    fn new(width: usize, height: usize, p: Patching, codes: bool) -> Result<Self> {
        let (ps, m, tps) = (p.patch_size, p.merge_size, p.temporal_patch_size);
        let unit = ps
            .checked_mul(m)
            .filter(|&u| u > 0 && tps > 0)
            .ok_or_else(|| {
                KernelError::InvalidArgument(format!(
                    "patch_size ({ps}), merge_size ({m}) and temporal_patch_size ({tps}) must be \
                     positive"
                ))
            })?;
        let fits = |side: usize| side > 0 && side.is_multiple_of(unit);
        if !fits(height) || !fits(width) {
            return Err(KernelError::InvalidArgument(format!(
                "image of {width}x{height} pixels is not a non-empty multiple of {unit} on each side"
            )));
        }
        let (gh, gw) = (height / ps, width / ps);
        let row_len = if codes { 3 * ps * ps } else { p.row_len()? };
        let overflow = || KernelError::Limit("patch tensor size overflows".into());
        let block_row_len = (gw * m).checked_mul(row_len).ok_or_else(overflow)?;
        let total = (gh / m).checked_mul(block_row_len).ok_or_else(overflow)?;
        Ok(Self {
            gh,
            gw,
            unit,
            row_len,
            block_row_len,
            total,
        })
    }
}

fn grid_of(src: &Source<'_>, p: Patching, codes: bool) -> Result<Grid> {
    if src.extent != src.kept() {
        return Err(KernelError::InvalidArgument(
            "patch rows are cut from the kept pixels; they do not pad".into(),
        ));
    }
    Grid::new(src.extent.0, src.extent.1, p, codes)
}

/// `(elements, gh, gw)` of the output of `src`, full form or (`codes`) compact.
pub(crate) fn shape(src: &Source<'_>, p: Patching, codes: bool) -> Result<(usize, usize, usize)> {
    let g = grid_of(src, p, codes)?;
    Ok((g.total, g.gh, g.gw))
}

/// The full form of `src` through `enc` into `out` (exactly [`shape`]'s elements), every
/// element written; `store` says how a row reaches memory.
pub(crate) fn write<E: Encode>(
    src: &Source<'_>,
    p: Patching,
    enc: &E,
    par: &Par,
    out: &mut [MaybeUninit<E::Out>],
    store: Store,
) -> Result<()> {
    let g = grid_of(src, p, false)?;
    let init = || (Band::default(), vec![E::Out::default(); g.row_len]);
    run_bands(&g, par, out, init, |state, block, part| {
        values_step(src, p, enc, &g, block, part, store, state)
    })
}

/// [`write`] while the image's rows are still arriving ([`run_streamed`]).
pub(crate) fn write_streamed<E: Encode, P: FnOnce() -> Result<()>>(
    src: &Source<'_>,
    p: Patching,
    enc: &E,
    par: &Par,
    out: &mut [MaybeUninit<E::Out>],
    store: Store,
    produce: P,
) -> Result<()> {
    let g = grid_of(src, p, false)?;
    let init = || (Band::default(), vec![E::Out::default(); g.row_len]);
    run_streamed(src, &g, par, out, produce, init, |state, block, part| {
        values_step(src, p, enc, &g, block, part, store, state)
    })
}

/// `out` cut into one band of whole block rows per thread ([`Par::for_each_band`]), each
/// walked a step of a few block rows at a time: `step(state, first block, step's output)`
/// with the thread's `init()` state.
fn run_bands<T, S, I, F>(
    g: &Grid,
    par: &Par,
    out: &mut [MaybeUninit<T>],
    init: I,
    step: F,
) -> Result<()>
where
    T: Send,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, usize, &mut [MaybeUninit<T>]) -> Result<()> + Sync,
{
    let per_step = STEP_ROWS.div_ceil(g.unit);
    let failed = OnceLock::<KernelError>::new();
    par.for_each_band(out, g.block_row_len, |first, chunk| {
        let mut state = init();
        for (i, part) in chunk.chunks_mut(per_step * g.block_row_len).enumerate() {
            if let Err(e) = step(&mut state, first + i * per_step, part) {
                let _ = failed.set(e);
                return;
            }
        }
    });
    failed.into_inner().map_or(Ok(()), Err)
}

/// The block rows of `out` (whole block rows, the first being `block`) through `enc`, with a
/// thread's band and frame buffer.
#[allow(clippy::too_many_arguments)]
fn values_step<E: Encode>(
    src: &Source<'_>,
    p: Patching,
    enc: &E,
    g: &Grid,
    block: usize,
    out: &mut [MaybeUninit<E::Out>],
    store: Store,
    (band, frame): &mut (Band, Vec<E::Out>),
) -> Result<()> {
    let blocks = out.len() / g.block_row_len;
    let (y, n) = (block * g.unit, blocks * g.unit);
    let rows = src.rows(y, y + n, band)?;
    block_rows(&rows, enc, p, g, out, store, frame);
    if store == Store::Streamed {
        stream::fence();
    }
    Ok(())
}

/// `out` cut into steps of whole block rows, run by [`fed::run`] alongside `produce` in the
/// order their rows arrive: `step(state, first block, step's output)`.
fn run_streamed<T, S, P, I, F>(
    src: &Source<'_>,
    g: &Grid,
    par: &Par,
    out: &mut [MaybeUninit<T>],
    produce: P,
    init: I,
    step: F,
) -> Result<()>
where
    T: Send,
    P: FnOnce() -> Result<()>,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, usize, &mut [MaybeUninit<T>]) -> Result<()> + Sync,
{
    let per_step = STEP_ROWS.div_ceil(g.unit);
    let steps: Vec<(usize, fed::Run<'_, T>)> = out
        .chunks_mut(per_step * g.block_row_len)
        .enumerate()
        .map(|(i, part)| {
            let block = i * per_step;
            let n = part.len() / g.block_row_len * g.unit;
            let y = block * g.unit;
            (src.need(y, y + n), (block, part))
        })
        .collect();
    fed::run(par, produce, steps, init, |state, (block, part)| {
        step(state, block, part)
    })
}

/// Block rows of the output from `rows` (`unit` image rows per block row), into `out`, which
/// holds whole block rows. Every element of `out` is written. With plain stores every patch
/// line is encoded straight into its `tps` places of the output row; with streamed ones the
/// row is built in L1 (`frame`) and copied out whole, as non-temporal stores want whole lines.
fn block_rows<E: Encode>(
    rows: &Rows<'_>,
    enc: &E,
    p: Patching,
    g: &Grid,
    out: &mut [MaybeUninit<E::Out>],
    store: Store,
    frame: &mut [E::Out],
) {
    let (ps, m, tps) = (p.patch_size, p.merge_size, p.temporal_patch_size);
    let plane = ps * ps;
    assert!(
        rows.height * g.block_row_len >= out.len() * g.unit && g.gw * ps == rows.width,
        "band does not cover the block rows"
    );
    for (b, block_row) in out.chunks_exact_mut(g.block_row_len).enumerate() {
        let y_base = b * g.unit;
        for (j, row) in block_row.chunks_exact_mut(g.row_len).enumerate() {
            let (mw, mh, bw) = (j % m, (j / m) % m, j / (m * m));
            let (y0, x0) = (mh * ps, (bw * m + mw) * ps);
            let direct = store == Store::Cached;
            let dst: &mut [MaybeUninit<E::Out>] = if direct {
                row
            } else {
                // SAFETY: `frame` is initialised and `scatter` only ever writes initialised
                // values into it, so viewing it as possibly-uninitialised loses nothing.
                unsafe { std::slice::from_raw_parts_mut(frame.as_mut_ptr().cast(), frame.len()) }
            };
            for py in 0..ps {
                let line = &rows.row(y_base + y0 + py)[x0 * 3..(x0 + ps) * 3];
                let scatter = Scatter {
                    copies: tps,
                    spacing: plane,
                    offset: py * ps,
                };
                enc.scatter(line, dst, scatter);
            }
            if !direct {
                E::store(row, frame, store);
            }
        }
    }
}

/// The compact form of `src` (codes, each frame once) into `out` (exactly [`shape`]'s
/// elements with `codes`), every element written.
pub(crate) fn write_codes(
    src: &Source<'_>,
    p: Patching,
    par: &Par,
    out: &mut [MaybeUninit<u8>],
) -> Result<()> {
    let g = grid_of(src, p, true)?;
    let init = || (Band::default(), Vec::new());
    run_bands(&g, par, out, init, |state, block, part| {
        codes_step(src, p, &g, block, part, state)
    })
}

/// [`write_codes`] while the image's rows are still arriving.
pub(crate) fn write_codes_streamed<P: FnOnce() -> Result<()>>(
    src: &Source<'_>,
    p: Patching,
    par: &Par,
    out: &mut [MaybeUninit<u8>],
    produce: P,
) -> Result<()> {
    let g = grid_of(src, p, true)?;
    let init = || (Band::default(), Vec::new());
    run_streamed(src, &g, par, out, produce, init, |state, block, part| {
        codes_step(src, p, &g, block, part, state)
    })
}

/// The codes of the block rows of `out` (the first being `block`), with a thread's band and
/// plane buffers.
fn codes_step(
    src: &Source<'_>,
    p: Patching,
    g: &Grid,
    block: usize,
    out: &mut [MaybeUninit<u8>],
    (band, planes): &mut (Band, Vec<u8>),
) -> Result<()> {
    let blocks = out.len() / g.block_row_len;
    let (y, n) = (block * g.unit, blocks * g.unit);
    let rows = src.rows(y, y + n, band)?;
    block_codes(&rows, p, g, out, planes);
    Ok(())
}

/// The codes of [`block_rows`]: each block row's band is first split into three channel
/// planes (`planes`, reused across calls; SSSE3 shuffles), then every patch line is three
/// copies of `ps` bytes rather than `3 * ps` single-byte stores. Every element of `out` is
/// written.
fn block_codes(
    rows: &Rows<'_>,
    p: Patching,
    g: &Grid,
    out: &mut [MaybeUninit<u8>],
    planes: &mut Vec<u8>,
) {
    let (ps, m) = (p.patch_size, p.merge_size);
    let plane = ps * ps;
    let code_row = 3 * plane;
    let width = rows.width;
    let n_blocks = out.len() / g.block_row_len;
    assert!(
        rows.height >= n_blocks * g.unit && g.gw * ps == width,
        "band does not cover the block rows"
    );
    let area = g.unit * width; // samples of one channel in one block row's band
    planes.resize(3 * area, 0);
    for (b, block_row) in out.chunks_exact_mut(g.block_row_len).enumerate() {
        {
            let (red, rest) = planes.split_at_mut(area);
            let (green, blue) = rest.split_at_mut(area);
            for y in 0..g.unit {
                let at = y * width;
                let (r, gg, bb) = (
                    &mut red[at..at + width],
                    &mut green[at..at + width],
                    &mut blue[at..at + width],
                );
                split_planes(rows.row(b * g.unit + y), r, gg, bb);
            }
        }
        let (red, rest) = planes.split_at(area);
        let (green, blue) = rest.split_at(area);
        for (j, row) in block_row.chunks_exact_mut(code_row).enumerate() {
            let (mw, mh, bw) = (j % m, (j / m) % m, j / (m * m));
            let (y0, x0) = (mh * ps, (bw * m + mw) * ps);
            for (c, src) in [red, green, blue].into_iter().enumerate() {
                let dst = &mut row[c * plane..(c + 1) * plane];
                let at = y0 * width + x0;
                // The patch sizes of the shipped checkpoints get constant-size line copies.
                match ps {
                    14 => patch_lines::<14>(dst, &src[at..], width),
                    16 => patch_lines::<16>(dst, &src[at..], width),
                    _ => {
                        for (py, line) in dst.chunks_exact_mut(ps).enumerate() {
                            let from = at + py * width;
                            line.write_copy_of_slice(&src[from..from + ps]);
                        }
                    }
                }
            }
        }
    }
}

/// `PS` lines of `PS` samples, `stride` apart in `src`, into `dst` back to back.
fn patch_lines<const PS: usize>(dst: &mut [MaybeUninit<u8>], src: &[u8], stride: usize) {
    for (py, line) in dst.chunks_exact_mut(PS).enumerate() {
        let at = py * stride;
        line.write_copy_of_slice(&src[at..at + PS]);
    }
}
