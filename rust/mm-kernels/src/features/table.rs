//! The per-channel table: what each of the 256 values of a uint8 sample becomes after the
//! reference's rescale and normalize. A resized uint8 sample has only 256 possible results, so
//! computing them once, with the reference's own dtypes and operation order, reproduces its
//! float rounding exactly, and the same table is what a compact feature carries.

use crate::error::{KernelError, Result};

/// Whose rescale-then-normalize arithmetic a [`Table`] reproduces. Every variant computes
/// `y = (x - mean) / std` per channel in float32 (`mean` and `std` rounded to float32 first);
/// they differ in how the sample `v` becomes `x` and where the rescale factor `r` goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    /// HuggingFace's numpy (PIL) backends: `rescale` multiplies in float64 and casts,
    /// `x = f32(f64(v) * r)`, then `(x - f32(mean)) / f32(std)` in float32.
    Numpy,
    /// HuggingFace's torchvision backends, which fold the rescale into mean and std:
    /// `k = f32(1 / r)`, then `(f32(v) - f32(mean) * k) / (f32(std) * k)` in float32.
    Torchvision,
    /// Every step in float32, as torch ops on a float32 tensor do: `x = f32(v) * f32(r)`,
    /// then `(x - f32(mean)) / f32(std)`.
    Float32,
}

impl Arith {
    /// The arithmetic named `numpy`, `torchvision` or `float32`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "numpy" => Ok(Self::Numpy),
            "torchvision" => Ok(Self::Torchvision),
            "float32" => Ok(Self::Float32),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown table arithmetic {other:?} (expected numpy, torchvision or float32)"
            ))),
        }
    }
}

/// The two HuggingFace image-processor backends a family can match bit for bit, and the one
/// parse of their names (`pil`, `aten_u8`) that every family's `resample` param uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The PIL backend (`<Model>ImageProcessorPil`): Pillow's resize, numpy arithmetic.
    Pil,
    /// The torchvision backend (the default class): aten's uint8 antialiased resize, the
    /// rescale folded into mean and std.
    AtenU8,
}

impl Backend {
    /// The backend named `pil` or `aten_u8`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "pil" => Ok(Self::Pil),
            "aten_u8" => Ok(Self::AtenU8),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown resample {other:?} (expected pil or aten_u8)"
            ))),
        }
    }

    /// The table arithmetic of this backend.
    pub fn arith(self) -> Arith {
        match self {
            Self::Pil => Arith::Numpy,
            Self::AtenU8 => Arith::Torchvision,
        }
    }

    /// This backend's resampler for a filter (`bicubic` or `bilinear`).
    pub fn resample(self, filter: Filter) -> crate::resize::Resample {
        use crate::resize::Resample;
        match (self, filter) {
            (Self::Pil, Filter::Bicubic) => Resample::PilBicubic,
            (Self::Pil, Filter::Bilinear) => Resample::PilBilinear,
            (Self::AtenU8, Filter::Bicubic) => Resample::AtenU8,
            (Self::AtenU8, Filter::Bilinear) => Resample::AtenU8Bilinear,
        }
    }
}

/// The interpolation a HuggingFace processor asks its backend for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// `PILImageResampling.BICUBIC` (3).
    Bicubic,
    /// `PILImageResampling.BILINEAR` (2).
    Bilinear,
}

/// `values[c][v]`: the float32 sample `v` of channel `c` becomes, plus an optional pad value
/// per channel (what the reference writes outside the image, itself the arithmetic applied to
/// an out-of-range sample such as `-1`). Also holds the arithmetic in the form SIMD lanes run
/// ([`Table::lanes`]), which gives the same bits.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    values: [[f32; 256]; 3],
    pad: Option<[f32; 3]>,
    lanes: Lanes,
}

/// The table's arithmetic as `(x - sub) / div` over `x` from the sample: what the SIMD writers
/// evaluate instead of a lookup (`scale` is the float64 rescale of [`Arith::Numpy`], the
/// float32 one of [`Arith::Float32`], unused by [`Arith::Torchvision`]).
///
/// A vector division costs ten times a multiply, so where it gives the same bits for all 256
/// samples of a channel, the quotient is instead the product with the reciprocal `r`
/// corrected by one fused step: `q = d * r; q += (d - q * div) * r` (each `(a - b * c)` and
/// `a + b * c` one fused multiply-add, `d = x - sub`). [`Table::new`] tries it on every
/// sample and keeps `r` in [`Lanes::recip`] only for the channels where every result is the
/// quotient's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lanes {
    /// The arithmetic.
    pub arith: Arith,
    /// The rescale factor.
    pub scale: f64,
    /// Subtracted per channel.
    pub sub: [f32; 3],
    /// Divided by per channel.
    pub div: [f32; 3],
    /// Per channel, `1 / div` when the corrected product gives the quotient's bits for every
    /// sample (see above), else `None`: the lanes divide.
    pub recip: [Option<f32>; 3],
    /// For [`Arith::Numpy`]: `(k, 1 / k)` with `k = f32(1 / scale)` when `x = f32(v) / k` by the
    /// same corrected product gives the float64 rescale's bits for every sample (it does at
    /// the usual `1 / 255`), so the lanes stay in float32; else `None`.
    pub x_recip: Option<(f32, f32)>,
}

impl Lanes {
    /// `x` of sample `v` (any integer, so that an out-of-range pad sample can be expressed).
    #[inline]
    fn x(&self, v: i32) -> f32 {
        match self.arith {
            Arith::Numpy => (f64::from(v) * self.scale) as f32,
            Arith::Torchvision => v as f32,
            Arith::Float32 => v as f32 * self.scale as f32,
        }
    }

    #[inline]
    fn value(&self, c: usize, v: i32) -> f32 {
        (self.x(v) - self.sub[c]) / self.div[c]
    }

    /// [`Lanes::value`] by the corrected product with `r`, as the SIMD lanes compute it.
    fn by_reciprocal(&self, c: usize, v: i32, r: f32) -> f32 {
        corrected(self.x(v) - self.sub[c], self.div[c], r)
    }
}

/// `d / div` as the SIMD lanes compute it from `r = 1 / div`: the product, corrected by one
/// fused step.
fn corrected(d: f32, div: f32, r: f32) -> f32 {
    let q = d * r;
    let e = (-q).mul_add(div, d);
    e.mul_add(r, q)
}

impl Table {
    /// The table of `mean` / `std` with rescale factor `rescale` under `arith`. A mean or
    /// std that is not finite once rounded to float32, a zero std, or a rescale factor that
    /// is not finite and positive is an [`KernelError::InvalidArgument`] naming the channel.
    pub fn new(mean: [f64; 3], std: [f64; 3], rescale: f64, arith: Arith) -> Result<Self> {
        if !(rescale.is_finite() && rescale > 0.0) {
            return Err(KernelError::InvalidArgument(format!(
                "rescale_factor must be finite and positive, got {rescale}"
            )));
        }
        let (m, s) = (mean.map(|v| v as f32), std.map(|v| v as f32));
        for c in 0..3 {
            if !(m[c].is_finite() && s[c].is_finite() && s[c] != 0.0) {
                return Err(KernelError::InvalidArgument(format!(
                    "channel {c}: image_mean {} and image_std {} must be finite, the std \
                     non-zero",
                    mean[c], std[c]
                )));
            }
        }
        let (sub, div) = match arith {
            Arith::Numpy | Arith::Float32 => (m, s),
            Arith::Torchvision => {
                let k = (1.0 / rescale) as f32;
                (m.map(|v| v * k), s.map(|v| v * k))
            }
        };
        let mut lanes = Lanes {
            arith,
            scale: rescale,
            sub,
            div,
            recip: [None; 3],
            x_recip: None,
        };
        if arith == Arith::Numpy {
            let k = (1.0 / rescale) as f32;
            let r = 1.0 / k;
            let exact =
                (0i32..256).all(|v| corrected(v as f32, k, r).to_bits() == lanes.x(v).to_bits());
            lanes.x_recip = exact.then_some((k, r));
        }
        let mut values = [[0f32; 256]; 3];
        for (c, row) in values.iter_mut().enumerate() {
            for (v, slot) in (0i32..).zip(row.iter_mut()) {
                *slot = lanes.value(c, v);
            }
            let r = 1.0 / div[c];
            let exact = (0i32..)
                .zip(row.iter())
                .all(|(v, want)| lanes.by_reciprocal(c, v, r).to_bits() == want.to_bits());
            lanes.recip[c] = exact.then_some(r);
        }
        Ok(Self {
            values,
            pad: None,
            lanes,
        })
    }

    /// The same table with a pad value per channel: the arithmetic applied to `sample` (e.g.
    /// `-1`, what Inkling's reference pads with before normalizing).
    pub fn with_pad_sample(mut self, sample: i32) -> Self {
        self.pad = Some([0, 1, 2].map(|c| self.lanes.value(c, sample)));
        self
    }

    /// `values[c][v]`.
    pub fn values(&self) -> &[[f32; 256]; 3] {
        &self.values
    }

    /// The pad value per channel, if the table has one.
    pub fn pad(&self) -> Option<[f32; 3]> {
        self.pad
    }

    /// The arithmetic in SIMD form.
    pub fn lanes(&self) -> &Lanes {
        &self.lanes
    }

    /// The table rounded to bfloat16 (round to nearest even, as torch's `.to(bfloat16)`).
    pub fn bf16(&self) -> Bf16Table {
        Bf16Table {
            values: self.values.map(|row| row.map(bf16_rne)),
            pad: self.pad.map(|p| p.map(bf16_rne)),
        }
    }
}

/// A [`Table`] rounded to bfloat16 bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bf16Table {
    values: [[u16; 256]; 3],
    pad: Option<[u16; 3]>,
}

impl Bf16Table {
    /// `values[c][v]` as bfloat16 bits.
    pub fn values(&self) -> &[[u16; 256]; 3] {
        &self.values
    }

    /// The pad value per channel as bfloat16 bits, if the table has one.
    pub fn pad(&self) -> Option<[u16; 3]> {
        self.pad
    }
}

/// A float32 rounded to bfloat16 bits, to nearest with ties to even (as
/// `torch.Tensor.to(torch.bfloat16)`); a NaN stays a quiet NaN of the same sign.
pub fn bf16_rne(x: f32) -> u16 {
    if x.is_nan() {
        return ((x.to_bits() >> 16) as u16) | 0x0040;
    }
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1));
    (rounded >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIP_MEAN: [f64; 3] = [0.48145466, 0.4578275, 0.40821073];
    const CLIP_STD: [f64; 3] = [0.26862954, 0.26130258, 0.27577711];

    /// Each arithmetic written out the way its reference runs it, for every sample.
    #[test]
    fn every_arithmetic_is_its_references() {
        for rescale in [1.0 / 255.0, 1.0 / 127.5, 0.5] {
            let m = CLIP_MEAN.map(|v| v as f32);
            let s = CLIP_STD.map(|v| v as f32);
            let numpy = Table::new(CLIP_MEAN, CLIP_STD, rescale, Arith::Numpy).unwrap();
            let torch = Table::new(CLIP_MEAN, CLIP_STD, rescale, Arith::Torchvision).unwrap();
            let f32s = Table::new(CLIP_MEAN, CLIP_STD, rescale, Arith::Float32).unwrap();
            let k = (1.0 / rescale) as f32;
            for c in 0..3 {
                for v in 0..256 {
                    let a = ((v as f64 * rescale) as f32 - m[c]) / s[c];
                    let b = (v as f32 - m[c] * k) / (s[c] * k);
                    let d = (v as f32 * rescale as f32 - m[c]) / s[c];
                    assert_eq!(numpy.values()[c][v].to_bits(), a.to_bits());
                    assert_eq!(torch.values()[c][v].to_bits(), b.to_bits());
                    assert_eq!(f32s.values()[c][v].to_bits(), d.to_bits());
                }
            }
        }
    }

    /// At rescale 1/255 the float64 product rounds to the float32 quotient for every sample
    /// (so the numpy table is also `ToTensor`'s `f32(v) / 255`).
    #[test]
    fn numpy_at_one_over_255_equals_a_float32_divide() {
        let t = Table::new(CLIP_MEAN, CLIP_STD, 1.0 / 255.0, Arith::Numpy).unwrap();
        for c in 0..3 {
            for v in 0..256 {
                let want = (v as f32 / 255.0 - CLIP_MEAN[c] as f32) / CLIP_STD[c] as f32;
                assert_eq!(t.values()[c][v].to_bits(), want.to_bits());
            }
        }
    }

    /// The reciprocal is kept only where it gives the quotient's bits, and does for the
    /// constants the shipped families use: CLIP's, SigLIP's 0.5, ImageNet's and Gemma 4's
    /// none (so their lanes never divide).
    #[test]
    fn the_reciprocal_is_kept_only_where_exact() {
        let siglip = [0.5; 3];
        let imagenet = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]);
        let unit = ([0.0; 3], [1.0; 3]); // Gemma 4: the rescale alone
        for (mean, std) in [(CLIP_MEAN, CLIP_STD), (siglip, siglip), imagenet, unit] {
            for arith in [Arith::Numpy, Arith::Torchvision, Arith::Float32] {
                let t = Table::new(mean, std, 1.0 / 255.0, arith).unwrap();
                let l = t.lanes();
                for c in 0..3 {
                    let r = l.recip[c].unwrap_or_else(|| panic!("{arith:?} channel {c}"));
                    for v in 0..256 {
                        let got = l.by_reciprocal(c, v as i32, r);
                        assert_eq!(got.to_bits(), t.values()[c][v].to_bits());
                    }
                }
            }
        }
        for rescale in [1.0 / 255.0, 1.0 / 127.5, 1.0 / 127.0, 0.5] {
            let t = Table::new(CLIP_MEAN, CLIP_STD, rescale, Arith::Numpy).unwrap();
            let (k, r) = t.lanes().x_recip.expect("the float32 rescale is exact");
            for v in 0..256 {
                let x = (f64::from(v) * rescale) as f32;
                assert_eq!(corrected(v as f32, k, r).to_bits(), x.to_bits());
            }
        }
        // A subnormal std: its reciprocal overflows to infinity, so the product misses.
        let t = Table::new([0.3; 3], [0.5, 1e-40, 0.5], 1.0 / 255.0, Arith::Numpy).unwrap();
        assert_eq!(t.lanes().recip.map(|r| r.is_some()), [true, false, true]);
    }

    #[test]
    fn pad_is_the_arithmetic_of_its_sample() {
        let t = Table::new(CLIP_MEAN, CLIP_STD, 1.0 / 255.0, Arith::Float32)
            .unwrap()
            .with_pad_sample(-1);
        let inv = (1.0f64 / 255.0) as f32;
        let pad = t.pad().unwrap();
        for c in 0..3 {
            let want = (-inv - CLIP_MEAN[c] as f32) / CLIP_STD[c] as f32;
            assert_eq!(pad[c].to_bits(), want.to_bits());
        }
        assert_eq!(t.bf16().pad().unwrap(), pad.map(bf16_rne));
    }

    #[test]
    fn bad_constants_are_refused_naming_the_channel() {
        let err = Table::new([0.5; 3], [0.5, 0.0, 0.5], 1.0 / 255.0, Arith::Numpy).unwrap_err();
        assert!(err.to_string().contains("channel 1"), "{err}");
        assert!(Table::new([f64::NAN, 0.5, 0.5], [0.5; 3], 0.5, Arith::Numpy).is_err());
        assert!(Table::new([0.5; 3], [1e300, 0.5, 0.5], 0.5, Arith::Numpy).is_err());
        assert!(Table::new([0.5; 3], [0.5; 3], 0.0, Arith::Numpy).is_err());
        assert!(Arith::parse("float64").is_err() && Backend::parse("bicubic").is_err());
    }

    #[test]
    fn rne_ties_go_to_even() {
        assert_eq!(bf16_rne(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(bf16_rne(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(bf16_rne(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert_eq!(bf16_rne(-2.0), 0xc000);
    }
}
