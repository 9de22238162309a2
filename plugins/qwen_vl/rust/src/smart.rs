//! `smart_resize`: the target size of an image, in HuggingFace's (`hf`) or SGLang's (`sglang`)
//! variant. Every step is the reference's IEEE double arithmetic in the reference's order, with
//! Python's round-half-even for `round` (so `f64::round`, which rounds half away, is not used).

use mm_kernels::{KernelError, Result};

/// Which implementation of `smart_resize` to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// HuggingFace transformers: `max(factor, .)` only after scaling down.
    Hf,
    /// SGLang (Python and Rust): `max(factor, .)` after rounding, none after scaling down.
    Sglang,
}

impl Variant {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "hf" => Ok(Self::Hf),
            "sglang" => Ok(Self::Sglang),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown smart_resize variant {other:?} (expected hf or sglang)"
            ))),
        }
    }
}

/// The pixel bounds and the side multiple (`patch_size * merge_size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub factor: u64,
    pub min_pixels: u64,
    pub max_pixels: u64,
    pub variant: Variant,
}

/// Largest pixel count whose double is exact, so `int / int` in Python and `f64 / f64` here
/// round the same single quotient.
const EXACT: u64 = 1 << 53;

/// Largest aspect ratio the references accept (exactly 200 passes).
const MAX_RATIO: f64 = 200.0;

/// `(height', width')` for an image of `height x width` pixels.
pub fn smart_resize(height: u64, width: u64, b: &Bounds) -> Result<(u64, u64)> {
    if height == 0 || width == 0 {
        return Err(KernelError::InvalidArgument(format!(
            "image of {width}x{height} pixels has a zero side"
        )));
    }
    if b.factor == 0 || b.min_pixels == 0 || b.max_pixels == 0 {
        return Err(KernelError::InvalidArgument(format!(
            "smart_resize needs positive factor ({}), min_pixels ({}) and max_pixels ({})",
            b.factor, b.min_pixels, b.max_pixels
        )));
    }
    let area = height
        .checked_mul(width)
        .filter(|&a| a <= EXACT)
        .ok_or_else(|| {
            KernelError::InvalidArgument(format!(
                "image of {width}x{height} pixels is too large to size (over 2^53 pixels)"
            ))
        })?;
    if b.min_pixels > EXACT || b.max_pixels > EXACT {
        return Err(KernelError::InvalidArgument(format!(
            "min_pixels ({}) and max_pixels ({}) must be at most 2^53",
            b.min_pixels, b.max_pixels
        )));
    }
    let (h, w, f) = (height as f64, width as f64, b.factor as f64);
    let ratio = h.max(w) / h.min(w);
    if ratio > MAX_RATIO {
        return Err(KernelError::InvalidArgument(format!(
            "image of {width}x{height} pixels has aspect ratio {ratio}, over the limit of 200"
        )));
    }
    let mut hb = round_half_even(h / f) * b.factor;
    let mut wb = round_half_even(w / f) * b.factor;
    let sglang = b.variant == Variant::Sglang;
    if sglang {
        hb = hb.max(b.factor);
        wb = wb.max(b.factor);
    }
    let pixels = u128::from(hb) * u128::from(wb);
    if pixels > u128::from(b.max_pixels) {
        let beta = (area as f64 / b.max_pixels as f64).sqrt();
        hb = floor_u64(h / beta / f) * b.factor;
        wb = floor_u64(w / beta / f) * b.factor;
        if !sglang {
            hb = hb.max(b.factor);
            wb = wb.max(b.factor);
        }
    } else if pixels < u128::from(b.min_pixels) {
        let beta = (b.min_pixels as f64 / area as f64).sqrt();
        hb = ceil_u64(h * beta / f) * b.factor;
        wb = ceil_u64(w * beta / f) * b.factor;
    }
    if hb == 0 || wb == 0 {
        return Err(KernelError::InvalidArgument(format!(
            "smart_resize ({:?}) sizes the {width}x{height} image to {wb}x{hb}, which is empty",
            b.variant
        )));
    }
    Ok((hb, wb))
}

/// Python's `round(x)` for a finite, non-negative `x` (ties go to the even neighbour).
fn round_half_even(x: f64) -> u64 {
    x.round_ties_even() as u64
}

fn floor_u64(x: f64) -> u64 {
    x.floor() as u64
}

fn ceil_u64(x: f64) -> u64 {
    x.ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(factor: u64, min: u64, max: u64, variant: Variant) -> Bounds {
        Bounds {
            factor,
            min_pixels: min,
            max_pixels: max,
            variant,
        }
    }

    #[test]
    fn spec_vectors_factor_28() {
        let hf = b(28, 3136, 12_845_056, Variant::Hf);
        // (w, h) -> (h', w')
        let cases = [
            ((640, 480), (476, 644)),
            ((1920, 1080), (1092, 1932)),
            ((30, 1000), (1008, 28)),
            ((700, 70), (56, 700)),
            ((4000, 3000), (2996, 4004)),
            ((10, 1000), (560, 28)),
            ((20, 20), (56, 56)),
        ];
        for ((w, h), want) in cases {
            assert_eq!(smart_resize(h, w, &hf).unwrap(), want, "{w}x{h}");
        }
        let sg = b(28, 3136, 12_845_056, Variant::Sglang);
        assert_eq!(smart_resize(1000, 10, &sg).unwrap(), (1008, 28));
    }

    #[test]
    fn spec_vectors_factor_32() {
        let q3 = b(32, 65_536, 16_777_216, Variant::Hf);
        assert_eq!(smart_resize(480, 640, &q3).unwrap(), (480, 640));
        assert_eq!(smart_resize(1080, 1920, &q3).unwrap(), (1088, 1920));
        assert_eq!(smart_resize(1000, 30, &q3).unwrap(), (1504, 64));
    }

    #[test]
    fn ties_round_to_even() {
        assert_eq!(round_half_even(0.5), 0);
        assert_eq!(round_half_even(1.5), 2);
        assert_eq!(round_half_even(2.5), 2);
    }

    #[test]
    fn ratio_and_zero_sides_are_errors() {
        let hf = b(28, 3136, 12_845_056, Variant::Hf);
        assert!(smart_resize(10, 2000, &hf).is_ok());
        let err = smart_resize(10, 2010, &hf).unwrap_err().to_string();
        assert!(err.contains("2010x10") && err.contains("201"), "{err}");
        let err = smart_resize(0, 5, &hf).unwrap_err().to_string();
        assert!(err.contains("5x0"), "{err}");
    }
}
