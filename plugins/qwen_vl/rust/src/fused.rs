//! Resize fused with normalize + patchify: the resize runs a few merge-block rows at a time into
//! a small band buffer (cache resident), and each band goes straight into the patch layout. The
//! resized image is never written out whole nor read back from memory.
//!
//! The passes, their tables and their order are exactly those of
//! [`mm_kernels::resize::ResizePlan`] (which plans and validates the resize; its pass-order rule
//! is mirrored here), so the bands are bit-identical to the rows of `resize_rgb`.

use std::mem::MaybeUninit;

use mm_kernels::resize::passes::{self, Kernel, Region};
use mm_kernels::resize::{AxisCoeffs, PassOrder, Resample, ResizePlan};
use mm_kernels::{Par, Result, RgbView};

use crate::normalize::Normalizer;
use crate::patchify::{block_rows, Grid, Patching, Store};

/// Image rows resized per step, at least (rounded up to whole merge-block rows).
const STEP_ROWS: usize = 48;

/// Which passes run, in which order (as `ResizePlan` picks them).
enum Steps {
    Copy,
    Horizontal(AxisCoeffs),
    Vertical(AxisCoeffs),
    HorizontalThenVertical {
        h: AxisCoeffs,
        v: AxisCoeffs,
    },
    /// The vertical pass reads only the columns `cols` the horizontal table uses; `h` is shifted
    /// to start at `cols.0`.
    VerticalThenHorizontal {
        v: AxisCoeffs,
        h: AxisCoeffs,
        cols: (usize, usize),
    },
}

impl Steps {
    fn new(
        src: RgbView<'_>,
        out_w: usize,
        out_h: usize,
        r: Resample,
        o: PassOrder,
    ) -> Result<Self> {
        let (in_w, in_h) = (src.width, src.height);
        if (in_w, in_h) == (out_w, out_h) {
            return Ok(Self::Copy);
        }
        // The plan is the authority on what may be resized (sizes, caps); its tables are
        // rebuilt below because its steps are private.
        ResizePlan::new(in_w, in_h, out_w, out_h, r, o)?;
        let vertical_first = match (r, o) {
            (Resample::AtenU8, _) | (_, PassOrder::Pillow12) => false,
            (_, PassOrder::Pillow13) => {
                let dh = in_h as i128 - out_h as i128;
                let dw = in_w as i128 - out_w as i128;
                dh > 0 && dh > 2 * dw
            }
        };
        Ok(match (out_w != in_w, out_h != in_h) {
            (false, _) => Self::Vertical(r.axis(in_h, out_h)?),
            (true, false) => Self::Horizontal(r.axis(in_w, out_w)?),
            (true, true) if vertical_first => {
                let mut h = r.axis(in_w, out_w)?;
                let cols = h.used_range();
                for s in &mut h.start {
                    *s -= cols.0;
                }
                h.in_size -= cols.0;
                Self::VerticalThenHorizontal {
                    v: r.axis(in_h, out_h)?,
                    h,
                    cols,
                }
            }
            (true, true) => Self::HorizontalThenVertical {
                h: r.axis(in_w, out_w)?,
                v: r.axis(in_h, out_h)?,
            },
        })
    }
}

/// Per-thread buffers of the band-wise resize.
#[derive(Default)]
struct Scratch {
    band: Vec<u8>,
    /// The intermediate rows of a two-pass resize.
    tmp: Rolling,
    transpose: Vec<u8>,
}

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
    let steps = Steps::new(src, out_w, out_h, resample, order)?;
    let row_bytes = out_w * 3;
    let per_step = STEP_ROWS.div_ceil(g.unit);
    let full = Region::full(src.data, src.width, src.height);
    let k = Kernel::Auto;
    let fill = |first: usize, chunk: &mut [MaybeUninit<f32>], store: Store| {
        let mut s = Scratch::default();
        let step_len = per_step * g.block_row_len;
        for (i, part) in chunk.chunks_mut(step_len).enumerate() {
            let blocks = part.len() / g.block_row_len;
            let (y, n) = ((first + i * per_step) * g.unit, blocks * g.unit);
            let band: &[u8] = match &steps {
                Steps::Copy => &src.data[y * row_bytes..(y + n) * row_bytes],
                _ => {
                    s.band.resize(n * row_bytes, 0);
                    resize_rows(&steps, full, out_w, y, &mut s, k);
                    &s.band
                }
            };
            block_rows(band, out_w, norm, p, &g, part, store);
        }
    };
    // SAFETY: `block_rows` writes every element of each part, and the parts tile each chunk.
    let out = unsafe { g.build(par, fill) }?;
    Ok((out, g.gh, g.gw))
}

/// Rows `y..y + n` of the resized image into `s.band` (`n` whole rows of `out_w` pixels).
fn resize_rows(
    steps: &Steps,
    full: Region<'_>,
    out_w: usize,
    y: usize,
    s: &mut Scratch,
    k: Kernel,
) {
    let row_bytes = out_w * 3;
    let n = s.band.len() / row_bytes;
    match steps {
        Steps::Copy => s
            .band
            .copy_from_slice(&full.data[y * row_bytes..(y + n) * row_bytes]),
        Steps::Horizontal(h) => {
            passes::horizontal_rows(full, h, y, &mut s.band, &mut s.transpose, k)
        }
        Steps::Vertical(v) => passes::vertical_rows(full, v, y, &mut s.band, k),
        Steps::HorizontalThenVertical { h, v } => {
            let rows = v.window_union(y, y + n);
            let transpose = &mut s.transpose;
            s.tmp.ensure(row_bytes, rows, |r, dst| {
                passes::horizontal_rows(full, h, r, dst, transpose, k);
            });
            passes::vertical_rows(s.tmp.region(out_w), v, y, &mut s.band, k);
        }
        Steps::VerticalThenHorizontal { v, h, cols } => {
            let cols_w = cols.1 - cols.0;
            let cropped = Region {
                x0: cols.0,
                w: cols_w,
                ..full
            };
            let tmp = &mut s.tmp.buf;
            tmp.resize(n * cols_w * 3, 0);
            passes::vertical_rows(cropped, v, y, tmp, k);
            let rows = Region {
                y0: y,
                h: n,
                ..Region::full(tmp, cols_w, n)
            };
            passes::horizontal_rows(rows, h, y, &mut s.band, &mut s.transpose, k);
        }
    }
}

/// A window of consecutive intermediate rows `first..first + rows`, slid forward as the output
/// rows that read it advance (their windows only ever move forward).
#[derive(Default)]
struct Rolling {
    buf: Vec<u8>,
    first: usize,
    rows: usize,
}

impl Rolling {
    /// Hold rows `lo..hi` of `rb` bytes: keep those already computed, `fill(first_row, dst)` the
    /// rest.
    fn ensure(
        &mut self,
        rb: usize,
        (lo, hi): (usize, usize),
        mut fill: impl FnMut(usize, &mut [u8]),
    ) {
        if lo < self.first || lo >= self.first + self.rows {
            self.first = lo;
            self.rows = 0;
        } else {
            let drop = lo - self.first;
            self.buf.copy_within(drop * rb..self.rows * rb, 0);
            self.first = lo;
            self.rows -= drop;
        }
        let have = self.first + self.rows;
        if hi > have {
            self.buf.resize((hi - self.first) * rb, 0);
            fill(
                have,
                &mut self.buf[(have - self.first) * rb..(hi - self.first) * rb],
            );
            self.rows = hi - self.first;
        }
    }

    fn region(&self, w: usize) -> Region<'_> {
        let data = &self.buf[..self.rows * w * 3];
        Region {
            y0: self.first,
            h: self.rows,
            ..Region::full(data, w, self.rows)
        }
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
                for r in [Resample::PilBicubic, Resample::AtenU8] {
                    for o in [PassOrder::Pillow13, PassOrder::Pillow12] {
                        let want = if (ow, oh) == (w, h) {
                            patchify(src, &t, p, &Par::inline()).unwrap()
                        } else {
                            let img = resize_rgb(src, ow, oh, r, o, &Par::inline()).unwrap();
                            patchify(img.view(), &t, p, &Par::inline()).unwrap()
                        };
                        for threads in [1, 3] {
                            let got = resize_patchify(src, ow, oh, r, o, &t, p, &Par::new(threads));
                            assert!(got.unwrap() == want, "{w}x{h} -> {ow}x{oh} {r:?} {o:?}");
                        }
                    }
                }
            }
        }
    }
}
