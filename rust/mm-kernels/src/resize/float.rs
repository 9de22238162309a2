//! torchvision's float antialiased bicubic (`aten_f32`, `aten_f32_nofma`): what
//! `torchvision.transforms.functional.resize(uint8_tensor, size, BICUBIC, antialias=True)` (the
//! v1 API, which casts to float32 first) computes on the CPU, then its `clamp(0, 255)`,
//! `round()` (half to even) and cast back to uint8.
//!
//! aten's separable antialiased kernel on a float32 tensor (`UpSampleKernel.cpp`,
//! `separable_upsample_generic_Nd_kernel_impl` with `HelperInterpCubic`): the width first when
//! it changes, into a float32 intermediate, then the height when it changes; per axis,
//! `_compute_index_ranges_weights<float>` (Pillow's window geometry, every step in float32 but
//! for the few C++ double promotions reproduced below) and per output `t = src[0] * w[0]; t +=
//! src[j] * w[j]` in float32 (`interpolate_aa_single_dim`).
//!
//! aten compiles that file once per CPU capability, and GCC contracts `a * b + c` into a fused
//! multiply-add in the builds that have one. [`Fma::Aten`] reproduces the AVX2 build (what
//! x86-64 servers run), measured against torch 2.10 and 2.15: the filter's polynomials are
//! contracted as written (`fma(1.5, x, -2.5)`, then `fma(t * x, x, 1)`; three nested `fma`s for
//! `1 <= |x| < 2`), and the accumulation loop is vectorized four taps at a time as an in-order
//! reduction (products rounded, then added in order) with the remaining `(n - 1) % 4` taps
//! fused. [`Fma::None`] is the portable build (`ATEN_CPU_CAPABILITY=default`): no contraction.
//! The two differ in the last bit of most float intermediates and in about one uint8 sample
//! in 50,000.

use super::passes::{Kernel, Region};
use crate::error::{KernelError, Result};

/// Which of aten's builds the float arithmetic reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fma {
    /// aten's AVX2 build (GCC's contraction and vectorization, see the module docs).
    Aten,
    /// aten's portable build: every multiply and add rounded on its own.
    None,
}

/// aten's antialiased bicubic table of one axis in float32: output `i` reads `len[i]` inputs
/// from `start[i]` with weights `weights[i * ksize ..][.. len[i]]`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FloatAxis {
    pub in_size: usize,
    pub out_size: usize,
    pub ksize: usize,
    pub start: Vec<usize>,
    pub len: Vec<usize>,
    pub weights: Vec<f32>,
    pub fma: Fma,
}

/// `HelperInterpCubic::aa_filter<float>` (Keys, a = -0.5), `cubic_convolution1/2` of
/// `UpSample.h` as the build computes them.
fn cubic(x: f32, fma: Fma) -> f32 {
    const A: f32 = -0.5;
    let x = x.abs();
    if x < 1.0 {
        match fma {
            // ((A + 2) * x - (A + 3)) * x * x + 1
            Fma::Aten => ((A + 2.0).mul_add(x, -(A + 3.0)) * x).mul_add(x, 1.0),
            Fma::None => ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0,
        }
    } else if x < 2.0 {
        match fma {
            // ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
            Fma::Aten => A
                .mul_add(x, -(5.0 * A))
                .mul_add(x, 8.0 * A)
                .mul_add(x, -(4.0 * A)),
            Fma::None => ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A,
        }
    } else {
        0.0
    }
}

impl FloatAxis {
    /// aten's table mapping `in_size` samples onto `out_size` (`align_corners=False`, no
    /// explicit scale factor, as `interpolate(size=...)` passes it).
    pub(crate) fn aten_bicubic(in_size: usize, out_size: usize, fma: Fma) -> Result<Self> {
        if in_size == 0 || out_size == 0 {
            return Err(KernelError::InvalidArgument(format!(
                "cannot resample an axis of {in_size} samples onto {out_size}"
            )));
        }
        // `area_pixel_compute_scale<float>`: `(float)input_size / output_size`, in float.
        let scale = in_size as f32 / out_size as f32;
        // `(interp_size * 0.5) * scale` in double, stored as float: exact (2 * scale).
        let support = if scale >= 1.0 { 2.0 * scale } else { 2.0 };
        let ksize = (support.ceil() as usize) * 2 + 1;
        // `1.0 / scale` in double, stored as float (the correctly rounded float quotient).
        let invscale = if scale >= 1.0 {
            (1.0 / f64::from(scale)) as f32
        } else {
            1.0
        };
        let slots = out_size
            .checked_mul(ksize)
            .filter(|&n| n <= isize::MAX as usize / 8);
        let Some(slots) = slots else {
            return Err(KernelError::InvalidArgument(format!(
                "resampling {in_size} samples onto {out_size} needs too large a coefficient table"
            )));
        };
        let mut start = Vec::with_capacity(out_size);
        let mut len = Vec::with_capacity(out_size);
        let mut weights = vec![0.0f32; slots];
        for (i, k) in weights.chunks_exact_mut(ksize).enumerate() {
            // `scale * (i + 0.5)`: a double product, stored as float.
            let center = (f64::from(scale) * (i as f64 + 0.5)) as f32;
            // `center - support + 0.5`: a float difference, then a double sum, truncated.
            let xmin = ((f64::from(center - support) + 0.5) as i64).max(0);
            let xmax = ((f64::from(center + support) + 0.5) as i64).min(in_size as i64);
            let n = (xmax - xmin).clamp(0, ksize as i64) as usize;
            let xmin = xmin as usize;
            let mut total = 0.0f32;
            for (j, slot) in k[..n].iter_mut().enumerate() {
                // `(j + xmin - center + 0.5) * invscale`: the int64 index becomes a float,
                // a float difference, then double arithmetic, passed to the float filter.
                let d = (j + xmin) as f32 - center;
                let w = cubic(((f64::from(d) + 0.5) * f64::from(invscale)) as f32, fma);
                *slot = w;
                total += w;
            }
            if total != 0.0 {
                for slot in &mut k[..n] {
                    *slot /= total;
                }
            }
            start.push(xmin);
            len.push(n);
        }
        Ok(Self {
            in_size,
            out_size,
            ksize,
            start,
            len,
            weights,
            fma,
        })
    }

    /// The weights of output `i`.
    #[inline]
    fn taps(&self, i: usize) -> &[f32] {
        &self.weights[i * self.ksize..][..self.len[i]]
    }

    /// The input indices that outputs `a..b` read, as one half-open range.
    pub(crate) fn window_union(&self, a: usize, b: usize) -> (usize, usize) {
        let lo = self.start[a..b].iter().copied().min().unwrap_or(0);
        let hi = (a..b)
            .map(|i| self.start[i] + self.len[i])
            .max()
            .unwrap_or(lo);
        (lo, hi.max(lo))
    }

    /// How many taps after the first are added unfused: every one in the portable build; in
    /// the AVX2 build, the ones its 4-wide in-order reduction covers.
    #[inline]
    fn unfused(&self, taps: usize) -> usize {
        let rest = taps.saturating_sub(1);
        match self.fma {
            Fma::None => rest,
            Fma::Aten => rest / 4 * 4,
        }
    }
}

/// torchvision's cast back: `clamp(0, 255)`, `round()` (half to even), `to(uint8)`.
#[inline(always)]
fn to_u8(v: f32) -> u8 {
    v.clamp(0.0, 255.0).round_ties_even() as u8
}

/// Rows per horizontal band (their samples side by side in one column slot).
const BAND: usize = 16;
/// Lanes of a column slot: RGB of every row of a band.
const LANES: usize = BAND * 3;
/// Lanes per step of the vertical pass.
const CHUNK: usize = 64;

/// Which passes run: the width first when it changes, then the height when it changes.
///
/// `one_column` is aten's quirk for a 1-pixel-wide output: its vertical loop
/// (`basic_loop_aa_vertical`) reads the window and weights of the first output of each inner
/// run, assuming the run goes along the width, where they do not change; with one column the
/// run goes down the height, so every output row repeats row 0 (per channel).
#[derive(Clone, Debug)]
pub(crate) struct FloatSteps {
    pub h: Option<FloatAxis>,
    pub v: Option<FloatAxis>,
    pub one_column: bool,
}

/// A thread's buffers for [`FloatSteps::rows`]: the horizontal pass's float rows, kept across
/// consecutive bands of one image, and the transposed band.
#[derive(Default)]
pub(crate) struct FloatScratch {
    mid: Vec<f32>,
    mid_first: usize,
    mid_rows: usize,
    cols: Vec<f32>,
    band: Vec<f32>,
}

impl FloatSteps {
    /// The input rows output rows `y0..y1` read.
    pub(crate) fn input_rows(&self, y0: usize, y1: usize) -> (usize, usize) {
        match &self.v {
            Some(v) if self.one_column => v.window_union(0, 1),
            Some(v) => v.window_union(y0, y1),
            None => (y0, y1),
        }
    }

    /// Output rows `y0..y1` (whole rows of `out_w` pixels) into `out`, from `src`, which holds
    /// at least the input rows [`Self::input_rows`] gives (with the image's row numbers).
    pub(crate) fn rows(
        &self,
        src: Region<'_>,
        y0: usize,
        out: &mut [u8],
        scratch: &mut FloatScratch,
        kernel: Kernel,
    ) {
        let simd = simd(kernel);
        match (&self.h, &self.v) {
            (None, None) => out.copy_from_slice(&src.data[..out.len()]),
            (Some(h), None) => {
                let row = h.out_size * 3;
                let n = out.len() / row;
                let mut mid = std::mem::take(&mut scratch.mid);
                mid.resize(n * row, 0.0);
                horizontal(src, h, y0, &mut mid, scratch, simd);
                for (d, &v) in out.iter_mut().zip(&mid) {
                    *d = to_u8(v);
                }
                scratch.mid = mid;
                scratch.mid_rows = 0;
            }
            (None, Some(v)) => {
                let row = src.w * 3;
                let lines = |k: usize| -> &[u8] {
                    let at = (k - src.y0) * src.stride + src.x0 * 3;
                    &src.data[at..at + row]
                };
                vertical(v, y0, self.one_column, row, lines, out, simd);
            }
            (Some(h), Some(v)) => {
                let row = h.out_size * 3;
                let (lo, hi) = self.input_rows(y0, y0 + out.len() / row);
                self.ensure_mid(src, h, (lo, hi), scratch, simd);
                let (mid, first) = (&scratch.mid, scratch.mid_first);
                let lines = |k: usize| -> &[f32] { &mid[(k - first) * row..][..row] };
                vertical(v, y0, self.one_column, row, lines, out, simd);
            }
        }
    }

    /// Hold the horizontal pass's rows `lo..hi` in `scratch.mid`, keeping those already there.
    fn ensure_mid(
        &self,
        src: Region<'_>,
        h: &FloatAxis,
        (lo, hi): (usize, usize),
        scratch: &mut FloatScratch,
        simd: bool,
    ) {
        let row = h.out_size * 3;
        let mut mid = std::mem::take(&mut scratch.mid);
        let (first, rows) = (scratch.mid_first, scratch.mid_rows);
        let kept = if lo >= first && lo < first + rows {
            mid.copy_within((lo - first) * row..rows * row, 0);
            rows - (lo - first)
        } else {
            0
        };
        let have = lo + kept;
        if hi > have {
            mid.resize((hi - lo) * row, 0.0);
            horizontal(
                src,
                h,
                have,
                &mut mid[(have - lo) * row..(hi - lo) * row],
                scratch,
                simd,
            );
        }
        scratch.mid = mid;
        scratch.mid_first = lo;
        scratch.mid_rows = hi.max(have) - lo;
    }
}

/// Whether the AVX2 + FMA build of the loops runs.
fn simd(kernel: Kernel) -> bool {
    #[cfg(target_arch = "x86_64")]
    if kernel == Kernel::Auto {
        return std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma");
    }
    let _ = kernel;
    false
}

/// Rows `first..` of the horizontal pass of `src` into `out` (whole rows of `h.out_size`
/// float RGB pixels).
fn horizontal(
    src: Region<'_>,
    h: &FloatAxis,
    first: usize,
    out: &mut [f32],
    scratch: &mut FloatScratch,
    simd: bool,
) {
    let row = h.out_size * 3;
    let cols = &mut scratch.cols;
    cols.resize(src.w * LANES, 0.0);
    let band = &mut scratch.band;
    band.resize(h.out_size * LANES, 0.0);
    for (b, rows) in out.chunks_mut(row * BAND).enumerate() {
        let n = rows.len() / row;
        let y = first + b * BAND;
        // Column-major: column `x`, row `r`, channel `c` at `x * LANES + r * 3 + c`.
        for r in 0..n {
            let at = (y + r - src.y0) * src.stride + src.x0 * 3;
            let line = &src.data[at..at + src.w * 3];
            for (x, px) in line.chunks_exact(3).enumerate() {
                for c in 0..3 {
                    cols[x * LANES + r * 3 + c] = f32::from(px[c]);
                }
            }
        }
        horizontal_band(cols, h, band, simd);
        for r in 0..n {
            let dst = &mut rows[r * row..(r + 1) * row];
            for (x, px) in dst.chunks_exact_mut(3).enumerate() {
                px.copy_from_slice(&band[x * LANES + r * 3..][..3]);
            }
        }
    }
}

fn horizontal_band(cols: &[f32], h: &FloatAxis, band: &mut [f32], simd: bool) {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is only true when AVX2 and FMA are available (`simd()`).
        unsafe { x86::horizontal_band(cols, h, band) };
        return;
    }
    let _ = simd;
    horizontal_band_impl(cols, h, band);
}

/// Every output column of a band: 48 lanes (16 rows of RGB) share each tap's weight.
#[inline(always)]
fn horizontal_band_impl(cols: &[f32], h: &FloatAxis, band: &mut [f32]) {
    for (xo, acc) in band.chunks_exact_mut(LANES).enumerate() {
        let taps = h.taps(xo);
        let unfused = h.unfused(taps.len());
        let base = h.start[xo] * LANES;
        let Some((&w0, rest)) = taps.split_first() else {
            acc.fill(0.0);
            continue;
        };
        for (a, &v) in acc.iter_mut().zip(&cols[base..base + LANES]) {
            *a = v * w0;
        }
        for (j, &w) in rest.iter().enumerate() {
            let col = &cols[base + (j + 1) * LANES..][..LANES];
            if j < unfused {
                for (a, &v) in acc.iter_mut().zip(col) {
                    *a += v * w;
                }
            } else {
                for (a, &v) in acc.iter_mut().zip(col) {
                    *a = v.mul_add(w, *a);
                }
            }
        }
    }
}

/// Output rows `first..` of the vertical pass into `out` (rows of `row` samples), the input
/// row `k` being `lines(k)`; with `row0`, each as output row 0.
fn vertical<'s, T: Copy + Into<f32> + 's>(
    v: &FloatAxis,
    first: usize,
    row0: bool,
    row: usize,
    lines: impl Fn(usize) -> &'s [T],
    out: &mut [u8],
    simd: bool,
) {
    let mut picked: Vec<&[T]> = Vec::new();
    for (r, dst) in out.chunks_exact_mut(row).enumerate() {
        let yo = if row0 { 0 } else { first + r };
        picked.clear();
        picked.extend((0..v.len[yo]).map(|k| lines(v.start[yo] + k)));
        vertical_row(&picked, v.taps(yo), v.unfused(v.len[yo]), dst, simd);
    }
}

fn vertical_row<T: Copy + Into<f32>>(
    lines: &[&[T]],
    taps: &[f32],
    unfused: usize,
    dst: &mut [u8],
    simd: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is only true when AVX2 and FMA are available (`simd()`).
        unsafe { x86::vertical_row(lines, taps, unfused, dst) };
        return;
    }
    let _ = simd;
    vertical_row_impl(lines, taps, unfused, dst);
}

/// One output row of the vertical pass, `CHUNK` lanes at a time.
#[inline(always)]
fn vertical_row_impl<T: Copy + Into<f32>>(
    lines: &[&[T]],
    taps: &[f32],
    unfused: usize,
    dst: &mut [u8],
) {
    let mut acc = [0.0f32; CHUNK];
    let mut j = 0;
    while j < dst.len() {
        let n = CHUNK.min(dst.len() - j);
        let acc = &mut acc[..n];
        match (lines.split_first(), taps.split_first()) {
            (Some((l0, lines)), Some((&w0, taps))) => {
                for (a, &v) in acc.iter_mut().zip(&l0[j..j + n]) {
                    *a = v.into() * w0;
                }
                for (k, (line, &w)) in lines.iter().zip(taps).enumerate() {
                    let src = &line[j..j + n];
                    if k < unfused {
                        for (a, &v) in acc.iter_mut().zip(src) {
                            *a += v.into() * w;
                        }
                    } else {
                        for (a, &v) in acc.iter_mut().zip(src) {
                            *a = v.into().mul_add(w, *a);
                        }
                    }
                }
            }
            _ => acc.fill(0.0),
        }
        for (d, &a) in dst[j..j + n].iter_mut().zip(acc.iter()) {
            *d = to_u8(a);
        }
        j += n;
    }
}

/// The same loops compiled with AVX2 and FMA (the compiler vectorizes them across lanes; each
/// lane's arithmetic is unchanged, and `mul_add` becomes one fused instruction).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::FloatAxis;

    /// # Safety
    /// AVX2 and FMA must be available.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn horizontal_band(cols: &[f32], h: &FloatAxis, band: &mut [f32]) {
        super::horizontal_band_impl(cols, h, band);
    }

    /// # Safety
    /// AVX2 and FMA must be available.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn vertical_row<T: Copy + Into<f32>>(
        lines: &[&[T]],
        taps: &[f32],
        unfused: usize,
        dst: &mut [u8],
    ) {
        super::vertical_row_impl(lines, taps, unfused, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::noise;

    fn steps(w: usize, h: usize, ow: usize, oh: usize, fma: Fma) -> FloatSteps {
        let axis = |n, m| FloatAxis::aten_bicubic(n, m, fma).unwrap();
        FloatSteps {
            h: (w != ow).then(|| axis(w, ow)),
            v: (h != oh).then(|| axis(h, oh)),
            one_column: ow == 1,
        }
    }

    fn run(
        img: &[u8],
        w: usize,
        h: usize,
        s: &FloatSteps,
        ow: usize,
        oh: usize,
        k: Kernel,
    ) -> Vec<u8> {
        let mut out = vec![0u8; ow * oh * 3];
        let mut scratch = FloatScratch::default();
        for (i, rows) in out.chunks_mut(ow * 3 * 5).enumerate() {
            s.rows(Region::full(img, w, h), i * 5, rows, &mut scratch, k);
        }
        out
    }

    #[test]
    fn simd_and_portable_loops_agree() {
        for (n, &(w, h, ow, oh)) in [
            (1, 1, 3, 2),
            (17, 33, 40, 70),
            (100, 37, 33, 90),
            (300, 91, 57, 91),
            (64, 200, 64, 41),
            (129, 70, 1, 1),
        ]
        .iter()
        .enumerate()
        {
            let img = noise(w * h * 3, n as u64);
            for fma in [Fma::Aten, Fma::None] {
                let s = steps(w, h, ow, oh, fma);
                let a = run(&img, w, h, &s, ow, oh, Kernel::Auto);
                let b = run(&img, w, h, &s, ow, oh, Kernel::Portable);
                assert_eq!(a, b, "{w}x{h} -> {ow}x{oh} {fma:?}");
            }
        }
    }

    #[test]
    fn windows_stay_inside_and_weights_sum_to_one() {
        for (i, o) in [(300, 57), (57, 300), (1, 9), (9, 1), (4032, 812), (5, 5)] {
            for fma in [Fma::Aten, Fma::None] {
                let a = FloatAxis::aten_bicubic(i, o, fma).unwrap();
                for x in 0..o {
                    assert!(
                        a.len[x] >= 1 && a.start[x] + a.len[x] <= i,
                        "{i}->{o} at {x}"
                    );
                    let s: f32 = a.taps(x).iter().sum();
                    assert!((s - 1.0).abs() < 1e-5, "{i}->{o} at {x}: {s}");
                }
            }
        }
        assert!(FloatAxis::aten_bicubic(0, 3, Fma::Aten).is_err());
    }

    #[test]
    fn the_two_builds_round_differently() {
        // The contracted filter moves weights by an ulp; some outputs of a noisy image follow.
        let (a, b) = (
            FloatAxis::aten_bicubic(300, 57, Fma::Aten).unwrap(),
            FloatAxis::aten_bicubic(300, 57, Fma::None).unwrap(),
        );
        assert_eq!(
            (a.start.clone(), a.len.clone()),
            (b.start.clone(), b.len.clone())
        );
        assert_ne!(a.weights, b.weights);
        assert_eq!(to_u8(2.5), 2);
        assert_eq!(to_u8(3.5), 4);
        assert_eq!((to_u8(-7.0), to_u8(255.6)), (0, 255));
    }
}
