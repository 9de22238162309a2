//! Per-axis fixed-point coefficient tables.
//!
//! Both references build a table the same way (Pillow's `precompute_coeffs`, which aten copied):
//! for every output index a window `[start, start + len)` of input indices and its normalised
//! float weights, then each weight is rounded half away from zero to a fixed-point integer. They
//! differ in the filter's float expression and in the fixed-point precision, and every detail of
//! the float arithmetic below (multiply by `1 / filterscale`, the `+ 0.5` truncations) decides
//! which way a weight rounds, so it follows the references operation for operation.

use crate::error::{KernelError, Result};

/// Pillow's `PRECISION_BITS` (`32 - 8 - 2`).
pub const PIL_PRECISION: u32 = 22;
/// aten caps its per-axis precision at this many fractional bits as well.
const ATEN_MAX_PRECISION: u32 = 22;

/// The continuous kernel, with the float expression of the reference it reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Pillow's `bicubic_filter` (a = -0.5, Horner form of Pillow's source).
    PilBicubic,
    /// Pillow's `lanczos_filter`: `sinc(x) * sinc(x / 3)` on `[-3, 3)`.
    PilLanczos,
    /// aten's `HelperInterpCubic::aa_filter` (a = -0.5, `cubic_convolution1/2` forms).
    AtenCubic,
    /// The triangle `1 - |x|` on `(-1, 1)`: Pillow's `bilinear_filter` and aten's
    /// `HelperInterpLinear::aa_filter`, which compute it with the same float expression.
    Triangle,
}

impl Filter {
    /// Half-width of the kernel at scale 1.
    pub fn support(self) -> f64 {
        match self {
            Self::PilBicubic | Self::AtenCubic => 2.0,
            Self::PilLanczos => 3.0,
            Self::Triangle => 1.0,
        }
    }

    /// Evaluate the kernel at `x` exactly as the reference's C/C++ does (no FMA contraction).
    pub fn eval(self, x: f64) -> f64 {
        match self {
            Self::PilBicubic => {
                const A: f64 = -0.5;
                let x = if x < 0.0 { -x } else { x };
                if x < 1.0 {
                    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * A
                } else {
                    0.0
                }
            }
            Self::PilLanczos => {
                if (-3.0..3.0).contains(&x) {
                    sinc(x) * sinc(x / 3.0)
                } else {
                    0.0
                }
            }
            Self::AtenCubic => {
                const A: f64 = -0.5;
                let x = x.abs();
                if x < 1.0 {
                    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A
                } else {
                    0.0
                }
            }
            Self::Triangle => {
                let x = if x < 0.0 { -x } else { x };
                if x < 1.0 {
                    1.0 - x
                } else {
                    0.0
                }
            }
        }
    }
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        return 1.0;
    }
    let x = x * std::f64::consts::PI;
    x.sin() / x
}

/// How the float weights become integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// A fixed number of fractional bits (Pillow: 22).
    Fixed(u32),
    /// aten's uint8 rule: the largest `p <= 22` whose largest weight still fits an int16.
    AtenInt16,
}

/// The fixed-point weights of one axis: output `i` reads `len[i]` inputs from `start[i]` with
/// weights `weights[i * ksize ..][.. len[i]]`; the sum is biased by `1 << (precision - 1)` and
/// shifted right by `precision`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisCoeffs {
    pub in_size: usize,
    pub out_size: usize,
    pub ksize: usize,
    pub precision: u32,
    pub start: Vec<usize>,
    pub len: Vec<usize>,
    pub weights: Vec<i32>,
    /// Every weight fits an i16 (aten's tables): one 16-bit multiply-add takes two taps.
    /// Otherwise (Pillow's 22-bit weights) the AVX-512 kernels split each weight in two and
    /// the AVX2 ones take a 32-bit multiply per tap.
    pub narrow: bool,
}

impl AxisCoeffs {
    /// Build the table mapping `in_size` samples onto `out_size`.
    pub fn new(
        filter: Filter,
        precision: Precision,
        in_size: usize,
        out_size: usize,
    ) -> Result<Self> {
        if in_size == 0 || out_size == 0 {
            return Err(KernelError::InvalidArgument(format!(
                "cannot resample an axis of {in_size} samples onto {out_size}"
            )));
        }
        let FloatTable {
            ksize,
            start,
            len,
            weights: float_w,
        } = float_weights(filter, in_size, out_size)?;
        let precision = match precision {
            Precision::Fixed(p) => p,
            Precision::AtenInt16 => aten_precision(&float_w),
        };
        let scale = f64::from(1u32 << precision);
        let weights = float_w
            .iter()
            .map(|&w| {
                let v = w * scale;
                // C's `(int)(v ± 0.5)`: round half away from zero, truncating toward zero.
                (if v < 0.0 { v - 0.5 } else { v + 0.5 }) as i32
            })
            .collect::<Vec<i32>>();
        let narrow = weights.iter().all(|&w| i16::try_from(w).is_ok());
        Ok(Self {
            in_size,
            out_size,
            ksize,
            precision,
            start,
            len,
            weights,
            narrow,
        })
    }

    /// Pillow's table for `Image.resize` along one axis.
    pub fn pil(filter: Filter, in_size: usize, out_size: usize) -> Result<Self> {
        Self::new(filter, Precision::Fixed(PIL_PRECISION), in_size, out_size)
    }

    /// aten's uint8 antialiased bicubic table along one axis.
    pub fn aten_bicubic(in_size: usize, out_size: usize) -> Result<Self> {
        Self::new(Filter::AtenCubic, Precision::AtenInt16, in_size, out_size)
    }

    /// aten's uint8 antialiased bilinear table along one axis.
    pub fn aten_bilinear(in_size: usize, out_size: usize) -> Result<Self> {
        Self::new(Filter::Triangle, Precision::AtenInt16, in_size, out_size)
    }

    /// The weights of output `i`.
    #[inline]
    pub fn taps(&self, i: usize) -> &[i32] {
        &self.weights[i * self.ksize..][..self.len[i]]
    }

    /// The half-open range of input indices any output reads (Pillow crops the first pass to it).
    pub fn used_range(&self) -> (usize, usize) {
        let first = self.start.first().copied().unwrap_or(0);
        let last = self
            .start
            .iter()
            .zip(&self.len)
            .map(|(s, l)| s + l)
            .max()
            .unwrap_or(first);
        (first, last.max(first))
    }

    /// The input rows (or columns) that outputs `a..b` read, as one half-open range.
    pub fn window_union(&self, a: usize, b: usize) -> (usize, usize) {
        let lo = self.start[a..b].iter().copied().min().unwrap_or(0);
        let hi = (a..b)
            .map(|i| self.start[i] + self.len[i])
            .max()
            .unwrap_or(lo);
        (lo, hi.max(lo))
    }

    /// The same table with every window shifted left by `offset` (for a cropped first pass).
    pub(crate) fn shifted(&self, offset: usize) -> Self {
        let mut out = self.clone();
        for s in &mut out.start {
            *s -= offset;
        }
        out.in_size -= offset;
        out
    }
}

/// The table before quantisation.
struct FloatTable {
    ksize: usize,
    start: Vec<usize>,
    len: Vec<usize>,
    weights: Vec<f64>,
}

/// Pillow's `precompute_coeffs` (aten's `_compute_indices_min_size_weights_aa` is the same
/// arithmetic): windows and normalised float weights, `ksize` slots per output.
fn float_weights(filter: Filter, in_size: usize, out_size: usize) -> Result<FloatTable> {
    let scale = in_size as f64 / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = filter.support() * filterscale;
    let ksize = (support.ceil() as usize) * 2 + 1;
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
    let mut weights = vec![0.0f64; slots];
    let ss = 1.0 / filterscale;
    for (i, k) in weights.chunks_exact_mut(ksize).enumerate() {
        let center = (i as f64 + 0.5) * scale;
        // `(int)` truncation toward zero, then the clamps of the reference.
        let xmin = ((center - support + 0.5) as i64).max(0) as usize;
        let xmax = ((center + support + 0.5) as i64).clamp(0, in_size as i64) as usize;
        let n = xmax.saturating_sub(xmin).min(ksize);
        let mut ww = 0.0;
        for (x, slot) in k[..n].iter_mut().enumerate() {
            let w = filter.eval(((x + xmin) as f64 - center + 0.5) * ss);
            *slot = w;
            ww += w;
        }
        if ww != 0.0 {
            for slot in &mut k[..n] {
                *slot /= ww;
            }
        }
        start.push(xmin);
        len.push(n);
    }
    Ok(FloatTable {
        ksize,
        start,
        len,
        weights,
    })
}

/// aten's `weights_precision`: grow while `(int)(0.5 + w_max * 2^(p+1)) < 2^15`, at most 22.
fn aten_precision(weights: &[f64]) -> u32 {
    let w_max = weights.iter().copied().fold(0.0f64, f64::max);
    let mut p = 0;
    while p < ATEN_MAX_PRECISION {
        let next = (0.5 + w_max * f64::from(1u32 << (p + 1))) as i64;
        if next >= 1 << 15 {
            break;
        }
        p += 1;
    }
    p.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_sum_to_one_in_fixed_point() {
        for (i, o) in [(100, 37), (37, 100), (5, 5), (4032, 1288), (1, 9)] {
            for f in [Filter::PilBicubic, Filter::PilLanczos, Filter::Triangle] {
                let c = AxisCoeffs::pil(f, i, o).unwrap();
                for k in 0..o {
                    let s: i64 = c.taps(k).iter().map(|&w| i64::from(w)).sum();
                    assert!((s - (1 << 22)).abs() <= c.len[k] as i64, "{i}->{o} {s}");
                }
            }
        }
    }

    #[test]
    fn aten_precision_keeps_weights_in_int16() {
        for (i, o) in [(100, 37), (37, 100), (4032, 1288), (3, 2000)] {
            for c in [
                AxisCoeffs::aten_bicubic(i, o).unwrap(),
                AxisCoeffs::aten_bilinear(i, o).unwrap(),
            ] {
                assert!(c.weights.iter().all(|&w| i16::try_from(w).is_ok()));
                assert!((1..=22).contains(&c.precision));
            }
        }
    }
}
