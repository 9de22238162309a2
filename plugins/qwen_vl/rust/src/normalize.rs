//! Rescale + normalize as one 256-entry table per channel: a `u8` sample has only 256 possible
//! results, so the table reproduces the reference's float32 rounding exactly at no cost.

use mm_kernels::{KernelError, Result};

/// Whose arithmetic the table reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// HF's numpy path: `x = f32(f64(v) * (1/255))`, then `(x - f32(mean)) / f32(std)` in f32.
    Pil,
    /// HF's torchvision path (mean and std fused with the rescale): `mean' = f32(mean) * 255`,
    /// `std' = f32(std) * 255` in f32, then `(f32(v) - mean') / std'`.
    AtenU8,
}

/// `table[c][v]`: the normalized value of sample `v` in channel `c`.
pub type Table = [[f32; 256]; 3];

pub fn table(mean: [f64; 3], std: [f64; 3], mode: Mode) -> Result<Table> {
    let mut out = [[0f32; 256]; 3];
    for c in 0..3 {
        let (m, s) = (mean[c] as f32, std[c] as f32);
        if s == 0.0 || !s.is_finite() || !m.is_finite() {
            return Err(KernelError::InvalidArgument(format!(
                "channel {c}: mean {} and std {} must be finite and std non-zero",
                mean[c], std[c]
            )));
        }
        let row = &mut out[c];
        match mode {
            Mode::Pil => {
                let scale = 1.0f64 / 255.0;
                for (v, slot) in row.iter_mut().enumerate() {
                    let x = (v as f64 * scale) as f32;
                    *slot = (x - m) / s;
                }
            }
            Mode::AtenU8 => {
                let (m255, s255) = (m * 255.0, s * 255.0);
                for (v, slot) in row.iter_mut().enumerate() {
                    *slot = (v as f32 - m255) / s255;
                }
            }
        }
    }
    Ok(out)
}

/// The table plus the same arithmetic in a form SIMD lanes can run: `(x - sub) / div` in f32,
/// where `x` is `f32(v)` (`AtenU8`) or `f32(f64(v) * (1/255))` (`Pil`). Each lane performs the
/// very IEEE operations the table was built with, so both give the same bits (a test checks all
/// 256 values of every channel).
#[derive(Clone, Debug)]
pub struct Normalizer {
    pub table: Table,
    mode: Mode,
    sub: [f32; 3],
    div: [f32; 3],
    avx2: bool,
}

impl Normalizer {
    pub fn new(mean: [f64; 3], std: [f64; 3], mode: Mode) -> Result<Self> {
        let table = table(mean, std, mode)?;
        let (m, s) = (mean.map(|v| v as f32), std.map(|v| v as f32));
        let (sub, div) = match mode {
            Mode::Pil => (m, s),
            Mode::AtenU8 => (m.map(|v| v * 255.0), s.map(|v| v * 255.0)),
        };
        #[cfg(target_arch = "x86_64")]
        let avx2 = std::arch::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        Ok(Self {
            table,
            mode,
            sub,
            div,
            avx2,
        })
    }

    /// Normalize a run of interleaved RGB pixels into `dst`, channel by channel: copy `t` of
    /// channel `c` starts at `dst[s.offset + (c * s.copies + t) * s.spacing]`.
    #[inline]
    pub fn pixels(&self, src: &[u8], dst: &mut [f32], s: Scatter) {
        let n = src.len() / 3;
        let last = (3 * s.copies)
            .checked_sub(1)
            .map(|k| k * s.spacing + s.offset + n);
        assert!(
            last.is_some_and(|end| end <= dst.len()) && (s.copies == 1 || n <= s.spacing),
            "scatter does not fit the destination"
        );
        #[cfg(target_arch = "x86_64")]
        if n >= 8 && self.avx2 {
            // SAFETY: AVX2 is available (detected in `new`); `n >= 8`, and every store lands in
            // `dst` (checked just above).
            unsafe { avx2::pixels(self, src, dst.as_mut_ptr(), s) };
            return;
        }
        for (c, table) in self.table.iter().enumerate() {
            for t in 0..s.copies {
                let at = s.offset + (c * s.copies + t) * s.spacing;
                for (d, px) in dst[at..at + n].iter_mut().zip(src.chunks_exact(3)) {
                    *d = table[usize::from(px[c])];
                }
            }
        }
    }
}

/// Where [`Normalizer::pixels`] puts each channel of a run, and how many copies of it.
#[derive(Clone, Copy, Debug)]
pub struct Scatter {
    pub copies: usize,
    pub spacing: usize,
    pub offset: usize,
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Mode, Normalizer, Scatter};
    use std::arch::x86_64::*;

    /// All `n = src.len() / 3` pixels, eight at a time (the last eight overlap when `n` is not
    /// a multiple of eight: those pixels are simply written twice).
    ///
    /// # Safety
    /// AVX2 must be available; `n >= 8`; `dst` is valid for writes at every float
    /// `s.offset + (c * s.copies + t) * s.spacing + k` with `c < 3`, `t < s.copies`, `k < n`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn pixels(nz: &Normalizer, src: &[u8], dst: *mut f32, s: Scatter) {
        let n = src.len() / 3;
        assert!(n >= 8);
        // Byte shuffles picking one channel of 8 pixels out of bytes 0..16 and 16..24.
        const Z: i8 = -1;
        let lo = [
            _mm_setr_epi8(0, 3, 6, 9, 12, 15, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
            _mm_setr_epi8(1, 4, 7, 10, 13, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
            _mm_setr_epi8(2, 5, 8, 11, 14, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
        ];
        let hi = [
            _mm_setr_epi8(Z, Z, Z, Z, Z, Z, 2, 5, Z, Z, Z, Z, Z, Z, Z, Z),
            _mm_setr_epi8(Z, Z, Z, Z, Z, 0, 3, 6, Z, Z, Z, Z, Z, Z, Z, Z),
            _mm_setr_epi8(Z, Z, Z, Z, Z, 1, 4, 7, Z, Z, Z, Z, Z, Z, Z, Z),
        ];
        let sub = nz.sub.map(|v| _mm256_set1_ps(v));
        let div = nz.div.map(|v| _mm256_set1_ps(v));
        let scale = _mm256_set1_pd(1.0f64 / 255.0);
        let pil = nz.mode == Mode::Pil;
        let mut next = 0;
        while next < n {
            let k = next.min(n - 8);
            next = k + 8;
            let p = src.as_ptr().add(k * 3);
            let a = _mm_loadu_si128(p.cast());
            let c = _mm_loadl_epi64(p.add(16).cast());
            for ch in 0..3 {
                let bytes = _mm_or_si128(_mm_shuffle_epi8(a, lo[ch]), _mm_shuffle_epi8(c, hi[ch]));
                let ints = _mm256_cvtepu8_epi32(bytes);
                let x = if pil {
                    let l = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(ints)), scale);
                    let h =
                        _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(ints, 1)), scale);
                    _mm256_set_m128(_mm256_cvtpd_ps(h), _mm256_cvtpd_ps(l))
                } else {
                    _mm256_cvtepi32_ps(ints)
                };
                let y = _mm256_div_ps(_mm256_sub_ps(x, sub[ch]), div[ch]);
                for t in 0..s.copies {
                    let at = s.offset + (ch * s.copies + t) * s.spacing + k;
                    _mm256_storeu_ps(dst.add(at), y);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pil_equals_divide_then_normalize() {
        // The spec's equivalent form: (f32(v) / 255 - mean) / std, all in f32.
        let mean = [0.48145466, 0.4578275, 0.40821073];
        let std = [0.26862954, 0.26130258, 0.27577711];
        let t = table(mean, std, Mode::Pil).unwrap();
        for (c, row) in t.iter().enumerate() {
            for (v, got) in row.iter().enumerate() {
                let want = (v as f32 / 255.0 - mean[c] as f32) / std[c] as f32;
                assert_eq!(got.to_bits(), want.to_bits());
            }
        }
    }

    /// Every value of every channel, through the SIMD lanes (with and without an overlapping
    /// tail) and the scalar path alike, each copy in its place.
    #[test]
    fn normalizer_pixels_equal_the_table() {
        let mean = [0.48145466, 0.4578275, 0.40821073];
        let std = [0.26862954, 0.26130258, 0.27577711];
        for mode in [Mode::Pil, Mode::AtenU8] {
            let nz = Normalizer::new(mean, std, mode).unwrap();
            let src: Vec<u8> = (0..=255u8)
                .flat_map(|v| [v, v.wrapping_mul(7), 255 - v])
                .collect();
            for n in [1, 7, 8, 9, 14, 16, 256] {
                for shift in [0, 256 - n] {
                    let px = &src[shift * 3..(shift + n) * 3];
                    let s = Scatter {
                        copies: 2,
                        spacing: n + 1,
                        offset: 1,
                    };
                    let mut dst = vec![-1f32; 6 * (n + 1) + 1];
                    nz.pixels(px, &mut dst, s);
                    let got: Vec<u32> = dst.iter().map(|v| v.to_bits()).collect();
                    let mut want = vec![(-1f32).to_bits(); dst.len()];
                    for c in 0..3 {
                        for t in 0..2 {
                            for (k, p) in px.chunks_exact(3).enumerate() {
                                let v = nz.table[c][usize::from(p[c])];
                                want[1 + (c * 2 + t) * (n + 1) + k] = v.to_bits();
                            }
                        }
                    }
                    assert_eq!(got, want, "{mode:?} n {n} shift {shift}");
                }
            }
        }
    }

    #[test]
    fn zero_std_is_refused() {
        assert!(table([0.5; 3], [0.5, 0.0, 0.5], Mode::AtenU8).is_err());
    }
}
