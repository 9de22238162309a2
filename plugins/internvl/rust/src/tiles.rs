//! One image to its tiles: the canvas resize (`cols * T x rows * T`) cut into `T x T` tiles in
//! row-major order, then the thumbnail (the whole image resized to `T x T`) when asked for, each
//! normalized straight into the `[tiles, 3, T, T]` float32 layout.
//!
//! The resizes run a band of rows at a time ([`ResizePlan::run_rows`], bit-identical to
//! `resize_rgb`), and each band is scattered into its tiles at once, so the resized canvas is
//! never written out whole. Tile rows (and the thumbnail) are independent jobs, fanned out
//! through the `par` seam; the result does not depend on the thread count.
//!
//! The same walk writes either the float32 values ([`process`], through the normalize table)
//! or the compact form's uint8 codes ([`process_codes`], the resized samples themselves, in the
//! same `[tiles, 3, T, T]` order): only the [`Encode`] of a sample differs.

use std::sync::Mutex;

use mm_kernels::resize::{PassOrder, Resample, ResizePlan, RowScratch};
use mm_kernels::{KernelError, Par, Result, RgbView};

use crate::normalize::Table;

/// Output rows resized per step: a few hundred KB of band, cache resident.
const STEP_ROWS: usize = 16;

/// The tiling chosen for an image (the Python side picks it, exactly as the reference does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiling {
    pub cols: usize,
    pub rows: usize,
    pub thumbnail: bool,
}

impl Tiling {
    /// Tiles in the output: the grid plus the thumbnail.
    pub fn tiles(&self) -> usize {
        self.cols * self.rows + usize::from(self.thumbnail)
    }
}

/// How to resize and normalize.
pub struct Settings<'a> {
    pub tile: usize,
    pub resample: Resample,
    pub order: PassOrder,
    pub table: &'a Table,
}

/// What one resized uint8 sample of channel `c` becomes in the output.
pub trait Encode: Sync {
    /// The output element (`f32` values, or `u8` codes).
    type Out: Copy + Default + Send;
    /// Sample `v` of channel `c` (0, 1 or 2).
    fn encode(&self, c: usize, v: u8) -> Self::Out;
}

impl Encode for Table {
    type Out = f32;
    #[inline(always)]
    fn encode(&self, c: usize, v: u8) -> f32 {
        self[c][usize::from(v)]
    }
}

/// The compact form's encoding: each sample is its own code (the table is applied later).
pub struct Codes;

impl Encode for Codes {
    type Out = u8;
    #[inline(always)]
    fn encode(&self, _c: usize, v: u8) -> u8 {
        v
    }
}

/// One independent piece of the output: tile row `row` of the canvas, or the thumbnail.
enum Job {
    CanvasRow(usize),
    Thumbnail,
}

/// The `[tiles, 3, T, T]` values of `src` under `tiling`, row-major.
pub fn process(src: RgbView<'_>, tiling: Tiling, s: &Settings<'_>, par: &Par) -> Result<Vec<f32>> {
    encoded(src, tiling, s, s.table, par)
}

/// The compact form of [`process`]: the `[tiles, 3, T, T]` uint8 samples whose table lookups
/// (`s.table[c][code]`) are exactly its values.
pub fn process_codes(
    src: RgbView<'_>,
    tiling: Tiling,
    s: &Settings<'_>,
    par: &Par,
) -> Result<Vec<u8>> {
    encoded(src, tiling, s, &Codes, par)
}

/// [`process`] with each sample written through `enc`.
fn encoded<E: Encode>(
    src: RgbView<'_>,
    tiling: Tiling,
    s: &Settings<'_>,
    enc: &E,
    par: &Par,
) -> Result<Vec<E::Out>> {
    let t = s.tile;
    if t == 0 || tiling.cols == 0 || tiling.rows == 0 {
        return Err(KernelError::InvalidArgument(format!(
            "tile size {t} and grid {}x{} must be positive",
            tiling.cols, tiling.rows
        )));
    }
    let too_big = || {
        KernelError::Limit(format!(
            "a {}x{} grid of {t}-pixel tiles is too large",
            tiling.cols, tiling.rows
        ))
    };
    let canvas_w = tiling.cols.checked_mul(t).ok_or_else(too_big)?;
    let canvas_h = tiling.rows.checked_mul(t).ok_or_else(too_big)?;
    let (in_w, in_h) = (src.width, src.height);
    let canvas = ResizePlan::new(in_w, in_h, canvas_w, canvas_h, s.resample, s.order)?;
    let thumb = if tiling.thumbnail {
        Some(ResizePlan::new(in_w, in_h, t, t, s.resample, s.order)?)
    } else {
        None
    };
    let plane = t * t;
    let tile_len = 3 * plane;
    let total = tiling.tiles().checked_mul(tile_len).ok_or_else(too_big)?;
    let mut out = vec![E::Out::default(); total];

    // Cut the output into one slice per job (disjoint), each locked once by its worker.
    let mut jobs: Vec<(Job, Mutex<&mut [E::Out]>)> = Vec::with_capacity(tiling.rows + 1);
    let mut rest: &mut [E::Out] = &mut out;
    for r in 0..tiling.rows {
        let (head, tail) = rest.split_at_mut(tiling.cols * tile_len);
        jobs.push((Job::CanvasRow(r), Mutex::new(head)));
        rest = tail;
    }
    if tiling.thumbnail {
        jobs.push((Job::Thumbnail, Mutex::new(rest)));
    }

    let results = par.map(&jobs, |_, (job, slot)| -> Result<()> {
        let mut guard = slot
            .lock()
            .map_err(|_| KernelError::InvalidArgument("a tile worker panicked".to_string()))?;
        let dst: &mut [E::Out] = &mut guard;
        match job {
            Job::CanvasRow(r) => fill(src, &canvas, r * t, t, tiling.cols, enc, dst),
            Job::Thumbnail => match &thumb {
                Some(plan) => fill(src, plan, 0, t, 1, enc, dst),
                None => Ok(()),
            },
        }
    });
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(out)
}

/// Resize output rows `y0..y0 + t` of `plan` and scatter them into `cols` tiles of `dst`.
fn fill<E: Encode>(
    src: RgbView<'_>,
    plan: &ResizePlan,
    y0: usize,
    t: usize,
    cols: usize,
    enc: &E,
    dst: &mut [E::Out],
) -> Result<()> {
    let in_row = src.width * 3;
    let out_row = plan.out_w * 3;
    let mut band = Vec::new();
    let mut scratch = RowScratch::default();
    let mut y = y0;
    while y < y0 + t {
        let n = STEP_ROWS.min(y0 + t - y);
        band.resize(n * out_row, 0);
        let (lo, hi) = plan.input_rows(y, y + n);
        let input = src.data.get(lo * in_row..hi * in_row).ok_or_else(|| {
            KernelError::InvalidArgument(format!("input rows {lo}..{hi} are outside the image"))
        })?;
        plan.run_rows(input, y, y + n, &mut band, &mut scratch)?;
        for (k, row) in band.chunks_exact(out_row).enumerate() {
            scatter_row(row, y - y0 + k, t, cols, enc, dst);
        }
        y += n;
    }
    Ok(())
}

/// Row `yy` (within its tiles) of a canvas row: pixel `x` of tile column `c` goes to tile `c`,
/// channel plane `ch`, at `[ch][yy][x % t]`. One pass over the pixels writes all three planes.
#[inline]
fn scatter_row<E: Encode>(
    row: &[u8],
    yy: usize,
    t: usize,
    cols: usize,
    enc: &E,
    dst: &mut [E::Out],
) {
    let plane = t * t;
    for (c, px) in row.chunks_exact(t * 3).take(cols).enumerate() {
        let tile = &mut dst[c * 3 * plane..(c + 1) * 3 * plane];
        let (p0, rest) = tile.split_at_mut(plane);
        let (p1, p2) = rest.split_at_mut(plane);
        let at = yy * t..(yy + 1) * t;
        let lanes = p0[at.clone()]
            .iter_mut()
            .zip(p1[at.clone()].iter_mut())
            .zip(p2[at].iter_mut());
        for (((d0, d1), d2), p) in lanes.zip(px.chunks_exact(3)) {
            *d0 = enc.encode(0, p[0]);
            *d1 = enc.encode(1, p[1]);
            *d2 = enc.encode(2, p[2]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::{table, Mode};
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

    /// The straightforward form: resize whole, crop each tile, normalize it.
    fn reference(src: RgbView<'_>, tiling: Tiling, s: &Settings<'_>) -> Vec<f32> {
        let t = s.tile;
        let mut out = Vec::new();
        let mut push = |img: &mm_kernels::RgbImage, c: usize, r: usize| {
            for ch in 0..3 {
                for y in 0..t {
                    for x in 0..t {
                        let i = ((r * t + y) * img.width + c * t + x) * 3 + ch;
                        out.push(s.table[ch][usize::from(img.data[i])]);
                    }
                }
            }
        };
        let (cw, chh) = (tiling.cols * t, tiling.rows * t);
        let canvas = resize_rgb(src, cw, chh, s.resample, s.order, &Par::inline()).unwrap();
        for r in 0..tiling.rows {
            for c in 0..tiling.cols {
                push(&canvas, c, r);
            }
        }
        if tiling.thumbnail {
            let th = resize_rgb(src, t, t, s.resample, s.order, &Par::inline()).unwrap();
            push(&th, 0, 0);
        }
        out
    }

    fn t_plane(s: &Settings<'_>) -> usize {
        s.tile * s.tile
    }

    /// Fused == resize, crop, normalize; for each resampler, pass order and thread count.
    #[test]
    fn fused_equals_crop_of_the_resize() {
        let tab = table([0.485, 0.456, 0.406], [0.229, 0.224, 0.225], Mode::Pil).unwrap();
        let tilings = [
            (1, 1, false),
            (2, 1, true),
            (1, 3, true),
            (3, 2, true),
            (4, 1, true),
        ];
        for (k, &(w, h)) in [(40, 36), (13, 57), (90, 20), (24, 24)].iter().enumerate() {
            let data = noise(w * h * 3, k as u64);
            let src = RgbView::new(w, h, &data).unwrap();
            for &(cols, rows, thumbnail) in &tilings {
                let tiling = Tiling {
                    cols,
                    rows,
                    thumbnail,
                };
                for resample in [Resample::PilBicubic, Resample::AtenU8] {
                    for order in [PassOrder::Pillow13, PassOrder::Pillow12] {
                        let s = Settings {
                            tile: 12,
                            resample,
                            order,
                            table: &tab,
                        };
                        let want = reference(src, tiling, &s);
                        for threads in [1, 3] {
                            let got = process(src, tiling, &s, &Par::new(threads)).unwrap();
                            assert!(got == want, "{w}x{h} {tiling:?} {resample:?} {order:?}");
                            let codes = process_codes(src, tiling, &s, &Par::new(threads));
                            let looked_up: Vec<f32> = codes
                                .unwrap()
                                .chunks_exact(t_plane(&s))
                                .enumerate()
                                .flat_map(|(i, pl)| pl.iter().map(move |&v| tab[i % 3][v as usize]))
                                .collect();
                            assert!(looked_up == want, "codes {w}x{h} {tiling:?} {resample:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn empty_grid_is_refused() {
        let tab = table([0.5; 3], [0.5; 3], Mode::Pil).unwrap();
        let data = noise(12, 1);
        let src = RgbView::new(2, 2, &data).unwrap();
        let s = Settings {
            tile: 4,
            resample: Resample::PilBicubic,
            order: PassOrder::Pillow13,
            table: &tab,
        };
        let zero = Tiling {
            cols: 0,
            rows: 1,
            thumbnail: false,
        };
        assert!(process(src, zero, &s, &Par::inline()).is_err());
    }
}
