//! Resize fused with normalize + patchify: the resize runs a few merge-block rows at a time into
//! a small band buffer (cache resident), and each band goes straight into the patch layout. The
//! resized image is never written out whole nor read back from memory.
//!
//! The bands come from [`mm_kernels::resize::ResizePlan::run_rows`], so they are bit-identical
//! to the rows of `resize_rgb`.

use std::mem::MaybeUninit;
use std::sync::OnceLock;

use mm_kernels::resize::{PassOrder, Resample, ResizePlan, RowScratch};
use mm_kernels::{KernelError, Par, Result, RgbView};

use crate::normalize::Normalizer;
use crate::patchify::{block_codes, block_rows, build_codes, Grid, Patching, Store};

/// Image rows resized per step, at least (rounded up to whole merge-block rows).
const STEP_ROWS: usize = 48;

/// Resize `src` to `out_w x out_h` (skipped when the size is unchanged) and patchify it.
/// Returns the values and the patch grid `(gh, gw)`.
#[allow(clippy::too_many_arguments)]
pub fn resize_patchify(
    src: RgbView<'_>,
    out_w: usize,
    out_h: usize,
    resample: Resample,
    order: PassOrder,
    norm: &Normalizer,
    p: Patching,
    par: &Par,
) -> Result<(Vec<f32>, usize, usize)> {
    let g = Grid::new(out_w, out_h, p)?;
    let (in_w, in_h) = (src.width, src.height);
    let plan = if (in_w, in_h) == (out_w, out_h) {
        None
    } else {
        Some(ResizePlan::new(in_w, in_h, out_w, out_h, resample, order)?)
    };
    let (in_row, row_bytes) = (in_w * 3, out_w * 3);
    let per_step = STEP_ROWS.div_ceil(g.unit);
    let failed = OnceLock::<KernelError>::new();
    let fill = |first: usize, chunk: &mut [MaybeUninit<f32>], store: Store| {
        let mut band = Vec::new();
        let mut scratch = RowScratch::default();
        let step_len = per_step * g.block_row_len;
        for (i, part) in chunk.chunks_mut(step_len).enumerate() {
            let blocks = part.len() / g.block_row_len;
            let (y, n) = ((first + i * per_step) * g.unit, blocks * g.unit);
            let rows: &[u8] = match &plan {
                None => &src.data[y * row_bytes..(y + n) * row_bytes],
                Some(plan) => {
                    band.resize(n * row_bytes, 0);
                    let (lo, hi) = plan.input_rows(y, y + n);
                    let input = &src.data[lo * in_row..hi * in_row];
                    if let Err(e) = plan.run_rows(input, y, y + n, &mut band, &mut scratch) {
                        let _ = failed.set(e);
                    }
                    &band
                }
            };
            block_rows(rows, out_w, norm, p, &g, part, store);
        }
    };
    // SAFETY: `block_rows` writes every element of each part, and the parts tile each chunk.
    let out = unsafe { g.build(par, fill) }?;
    match failed.into_inner() {
        Some(e) => Err(e),
        None => Ok((out, g.gh, g.gw)),
    }
}

/// [`resize_patchify`] in the compact form: the same resize bands, written as uint8 codes
/// (`[gh * gw, 3 * ps * ps]`, frames once) instead of normalized floats.
pub fn resize_codes(
    src: RgbView<'_>,
    out_w: usize,
    out_h: usize,
    resample: Resample,
    order: PassOrder,
    p: Patching,
    par: &Par,
) -> Result<(Vec<u8>, usize, usize)> {
    let g = Grid::new(out_w, out_h, p)?;
    let (in_w, in_h) = (src.width, src.height);
    let plan = if (in_w, in_h) == (out_w, out_h) {
        None
    } else {
        Some(ResizePlan::new(in_w, in_h, out_w, out_h, resample, order)?)
    };
    let (in_row, row_bytes) = (in_w * 3, out_w * 3);
    let per_step = STEP_ROWS.div_ceil(g.unit);
    let block_len = g.gw * p.merge_size * 3 * p.patch_size * p.patch_size;
    let failed = OnceLock::<KernelError>::new();
    let fill = |first: usize, chunk: &mut [MaybeUninit<u8>]| {
        let mut band = Vec::new();
        let mut planes = Vec::new();
        let mut scratch = RowScratch::default();
        for (i, part) in chunk.chunks_mut(per_step * block_len).enumerate() {
            let blocks = part.len() / block_len;
            let (y, n) = ((first + i * per_step) * g.unit, blocks * g.unit);
            let rows: &[u8] = match &plan {
                None => &src.data[y * row_bytes..(y + n) * row_bytes],
                Some(plan) => {
                    band.resize(n * row_bytes, 0);
                    let (lo, hi) = plan.input_rows(y, y + n);
                    let input = &src.data[lo * in_row..hi * in_row];
                    if let Err(e) = plan.run_rows(input, y, y + n, &mut band, &mut scratch) {
                        let _ = failed.set(e);
                    }
                    &band
                }
            };
            block_codes(rows, out_w, p, &g, part, &mut planes);
        }
    };
    // SAFETY: `block_codes` writes every element of each part, and the parts tile each chunk.
    let out = unsafe { build_codes(&g, p, par, fill) }?;
    match failed.into_inner() {
        Some(e) => Err(e),
        None => Ok((out, g.gh, g.gw)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::{Mode, Normalizer};
    use crate::patchify::patchify;
    use mm_kernels::resize::resize_rgb;

    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 56) as u8
            })
            .collect()
    }

    /// The compact rows expanded by the table, each frame repeated: the float rows.
    fn expand(codes: &[u8], t: &Normalizer, p: Patching) -> Vec<f32> {
        let plane = p.patch_size * p.patch_size;
        let mut out = Vec::new();
        for row in codes.chunks_exact(3 * plane) {
            for c in 0..3 {
                let ch = &row[c * plane..(c + 1) * plane];
                for _ in 0..p.temporal_patch_size {
                    out.extend(ch.iter().map(|&v| t.table[c][usize::from(v)]));
                }
            }
        }
        out
    }

    /// Fused == resize_rgb then patchify, for every pass combination, order and thread count.
    #[test]
    fn fused_equals_resize_then_patchify() {
        let p = Patching {
            patch_size: 2,
            merge_size: 2,
            temporal_patch_size: 2,
        };
        let t = Normalizer::new([0.5; 3], [0.25; 3], Mode::Pil).unwrap();
        let sizes = [(40, 36), (13, 57), (90, 20), (41, 41)];
        let outs = [
            (40, 36),
            (40, 52),
            (24, 36),
            (44, 32),
            (36, 40),
            (80, 100),
            (8, 4),
        ];
        for (k, &(w, h)) in sizes.iter().enumerate() {
            let data = noise(w * h * 3, k as u64);
            let src = RgbView::new(w, h, &data).unwrap();
            for &(ow, oh) in &outs {
                check_fused(src, ow, oh, &t, p);
            }
        }
        // The patch sizes with their own code paths (Qwen2/2.5: 14, Qwen3: 16).
        for ps in [14, 16] {
            let p = Patching {
                patch_size: ps,
                merge_size: 2,
                temporal_patch_size: 2,
            };
            let data = noise(75 * 61 * 3, ps as u64);
            let src = RgbView::new(75, 61, &data).unwrap();
            for (ow, oh) in [(4 * ps, 2 * ps), (6 * ps, 4 * ps)] {
                check_fused(src, ow, oh, &t, p);
            }
        }
    }

    fn check_fused(src: RgbView<'_>, ow: usize, oh: usize, t: &Normalizer, p: Patching) {
        let (w, h) = (src.width, src.height);
        for r in [Resample::PilBicubic, Resample::AtenU8] {
            for o in [PassOrder::Pillow13, PassOrder::Pillow12] {
                let want = if (ow, oh) == (w, h) {
                    patchify(src, t, p, &Par::inline()).unwrap()
                } else {
                    let img = resize_rgb(src, ow, oh, r, o, &Par::inline()).unwrap();
                    patchify(img.view(), t, p, &Par::inline()).unwrap()
                };
                for threads in [1, 3] {
                    let got = resize_patchify(src, ow, oh, r, o, t, p, &Par::new(threads));
                    assert!(got.unwrap() == want, "{w}x{h} -> {ow}x{oh} {r:?} {o:?}");
                    let (codes, gh, gw) =
                        resize_codes(src, ow, oh, r, o, p, &Par::new(threads)).unwrap();
                    assert_eq!((gh, gw), (want.1, want.2));
                    assert_eq!(expand(&codes, t, p), want.0, "codes {w}x{h}");
                }
            }
        }
    }
}
