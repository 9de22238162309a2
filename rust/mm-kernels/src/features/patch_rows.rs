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
use super::encode::Encode;
use super::fed;
use super::parts::{Band, Rows, Source};
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

/// Per-thread scratch of the writer: the resized band, the band's channel planes (encoders
/// without a patch kernel), and the output row being built.
struct Scratch<T> {
    band: Band,
    planes: Vec<T>,
    frame: Vec<T>,
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Self {
            band: Band::default(),
            planes: Vec::new(),
            frame: Vec::new(),
        }
    }
}

/// `src` through `enc` into `out` (exactly [`shape`]'s elements, in the compact form when
/// `enc` writes codes), every element written; `store` says how a row reaches memory.
pub(crate) fn write<E: Encode>(
    src: &Source<'_>,
    p: Patching,
    enc: &E,
    par: &Par,
    out: &mut [MaybeUninit<E::Out>],
    store: Store,
) -> Result<()> {
    let g = grid_of(src, p, enc.is_codes())?;
    run_bands(&g, par, out, Scratch::default, |scratch, block, part| {
        step(src, p, enc, &g, block, part, store, scratch)
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
    let g = grid_of(src, p, enc.is_codes())?;
    run_streamed(
        src,
        &g,
        par,
        out,
        produce,
        Scratch::default,
        |scratch, block, part| step(src, p, enc, &g, block, part, store, scratch),
    )
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
/// thread's scratch.
#[allow(clippy::too_many_arguments)]
fn step<E: Encode>(
    src: &Source<'_>,
    p: Patching,
    enc: &E,
    g: &Grid,
    block: usize,
    out: &mut [MaybeUninit<E::Out>],
    store: Store,
    scratch: &mut Scratch<E::Out>,
) -> Result<()> {
    let blocks = out.len() / g.block_row_len;
    let (y, n) = (block * g.unit, blocks * g.unit);
    let rows = src.rows(y, y + n, &mut scratch.band)?;
    // The compact form holds each frame once.
    let copies = if enc.is_codes() {
        1
    } else {
        p.temporal_patch_size
    };
    let layout = Layout { p, copies };
    block_rows(
        &rows,
        enc,
        layout,
        g,
        out,
        store,
        &mut scratch.planes,
        &mut scratch.frame,
    );
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

/// Where a patch's samples go in its output row: channel `c`, copy `t`, line `py` starts at
/// `((c * copies + t) * ps + py) * ps`.
#[derive(Clone, Copy)]
struct Layout {
    p: Patching,
    /// Copies of each frame: `temporal_patch_size` in the full form, 1 in the compact one.
    copies: usize,
}

/// Block rows of the output from `rows` (`unit` image rows per block row), into `out`, which
/// holds whole block rows; every element of `out` is written.
///
/// An encoder with a patch kernel ([`Encode::has_patch_kernel`]) encodes each patch straight
/// from the band. Otherwise each block row's band is first encoded into three channel planes
/// (`planes`, reused across calls), a whole image row at a time so that the encoder's SIMD
/// runs over long rows, and every patch line is then `copies` copies of `ps` elements of a
/// plane. Either way an output row is built in L1 (`frame`) and copied out whole: one long
/// copy of wide stores beats its 84 short pieces going to memory one by one (measured: 0.1
/// ms of a 2.3 ms 640x480 Qwen2 item), and non-temporal stores want whole lines.
#[allow(clippy::too_many_arguments)]
fn block_rows<E: Encode>(
    rows: &Rows<'_>,
    enc: &E,
    layout: Layout,
    g: &Grid,
    out: &mut [MaybeUninit<E::Out>],
    store: Store,
    planes: &mut Vec<E::Out>,
    frame: &mut Vec<E::Out>,
) {
    let (ps, m) = (layout.p.patch_size, layout.p.merge_size);
    let plane = ps * ps;
    let width = rows.width;
    let n_blocks = out.len() / g.block_row_len;
    assert!(
        rows.height >= n_blocks * g.unit
            && g.gw * ps == width
            && g.row_len == 3 * layout.copies * plane,
        "band does not cover the block rows"
    );
    frame.resize(g.row_len, E::Out::default());
    if enc.has_patch_kernel(ps) {
        for (b, block_row) in out.chunks_exact_mut(g.block_row_len).enumerate() {
            let top = b * g.unit;
            for (j, row) in block_row.chunks_exact_mut(g.row_len).enumerate() {
                let (mw, mh, bw) = (j % m, (j / m) % m, j / (m * m));
                let (y0, x0) = (top + mh * ps, (bw * m + mw) * ps);
                let at = y0 * rows.stride + rows.x0 + x0 * 3;
                // SAFETY: as for `planes` below.
                let dst: &mut [MaybeUninit<E::Out>] = unsafe {
                    std::slice::from_raw_parts_mut(frame.as_mut_ptr().cast(), frame.len())
                };
                enc.encode_patch(&rows.data[at..], rows.stride, ps, layout.copies, dst);
                E::store(row, frame, store);
            }
        }
        return;
    }
    let area = g.unit * width; // samples of one channel in one block row's band
    planes.resize(3 * area, E::Out::default());
    for (b, block_row) in out.chunks_exact_mut(g.block_row_len).enumerate() {
        {
            // SAFETY: `planes` is initialised and the encoder only ever writes initialised
            // values into it, so viewing it as possibly-uninitialised loses nothing.
            let all: &mut [MaybeUninit<E::Out>] =
                unsafe { std::slice::from_raw_parts_mut(planes.as_mut_ptr().cast(), planes.len()) };
            let (red, rest) = all.split_at_mut(area);
            let (green, blue) = rest.split_at_mut(area);
            for y in 0..g.unit {
                let at = y * width;
                enc.encode_planes(
                    rows.row(b * g.unit + y),
                    [
                        &mut red[at..at + width],
                        &mut green[at..at + width],
                        &mut blue[at..at + width],
                    ],
                );
            }
        }
        let (red, rest) = planes.split_at(area);
        let (green, blue) = rest.split_at(area);
        for (j, row) in block_row.chunks_exact_mut(g.row_len).enumerate() {
            let (mw, mh, bw) = (j % m, (j / m) % m, j / (m * m));
            let at = mh * ps * width + (bw * m + mw) * ps;
            // SAFETY: as for `planes` above.
            let dst: &mut [MaybeUninit<E::Out>] =
                unsafe { std::slice::from_raw_parts_mut(frame.as_mut_ptr().cast(), frame.len()) };
            for (c, src) in [red, green, blue].into_iter().enumerate() {
                let dst = &mut dst[c * layout.copies * plane..(c + 1) * layout.copies * plane];
                let src = &src[at..];
                // The patch sizes of the shipped checkpoints get constant-size line copies.
                match ps {
                    14 => patch_lines::<_, 14>(dst, src, width, layout.copies),
                    16 => patch_lines::<_, 16>(dst, src, width, layout.copies),
                    _ => {
                        for py in 0..ps {
                            let line = &src[py * width..py * width + ps];
                            for t in 0..layout.copies {
                                let to = (t * ps + py) * ps;
                                dst[to..to + ps].write_copy_of_slice(line);
                            }
                        }
                    }
                }
            }
            E::store(row, frame, store);
        }
    }
}

/// `PS` lines of `PS` samples, `stride` apart in `src`, into `copies` planes of `dst` (each
/// `PS * PS` long, back to back), line after line.
#[inline]
fn patch_lines<T: Copy, const PS: usize>(
    dst: &mut [MaybeUninit<T>],
    src: &[T],
    stride: usize,
    copies: usize,
) {
    assert!(dst.len() >= copies * PS * PS && src.len() >= (PS - 1) * stride + PS);
    for py in 0..PS {
        let line = &src[py * stride..][..PS];
        for t in 0..copies {
            let to = (t * PS + py) * PS;
            dst[to..to + PS].write_copy_of_slice(line);
        }
    }
}
