//! Rescale + normalize as one 256-entry table per channel. The tiles are cut from uint8 resized
//! pixels, so each output value depends on one `u8` sample only: a table of its 256 possible
//! results reproduces the reference's float32 rounding exactly (and is the form a compact,
//! uint8-carrying feature can later ship instead of the floats).

use mm_kernels::{KernelError, Result};

/// Whose arithmetic the table reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// HF's PIL/numpy backend (and the model card's `ToTensor` + `Normalize`, which rounds the
    /// same): `x = f32(f64(v) * (1/255))`, then `(x - f32(mean)) / f32(std)` in f32.
    Pil,
    /// HF's torchvision backend, which folds the rescale into mean and std:
    /// `(f32(v) - f32(mean) * 255) / (f32(std) * 255)` in f32.
    AtenU8,
}

/// `table[c][v]`: the normalized value of sample `v` in channel `c`.
pub type Table = [[f32; 256]; 3];

/// The table for `mean` / `std` under `mode`; refuses a zero or non-finite std or mean.
pub fn table(mean: [f64; 3], std: [f64; 3], mode: Mode) -> Result<Table> {
    let mut out = [[0f32; 256]; 3];
    for (c, row) in out.iter_mut().enumerate() {
        let (m, s) = (mean[c] as f32, std[c] as f32);
        if s == 0.0 || !s.is_finite() || !m.is_finite() {
            return Err(KernelError::InvalidArgument(format!(
                "channel {c}: image_mean {} and image_std {} must be finite, the std non-zero",
                mean[c], std[c]
            )));
        }
        for (v, slot) in row.iter_mut().enumerate() {
            *slot = match mode {
                Mode::Pil => ((v as f64 * (1.0 / 255.0)) as f32 - m) / s,
                Mode::AtenU8 => (v as f32 - m * 255.0) / (s * 255.0),
            };
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model card's `ToTensor` divides in f32 (`f32(v) / 255`); the table's f64 product
    /// rounds to the same f32 for every sample, so one table serves both references.
    #[test]
    fn pil_equals_float32_divide() {
        let mean = [0.485, 0.456, 0.406];
        let std = [0.229, 0.224, 0.225];
        let t = table(mean, std, Mode::Pil).unwrap();
        for (c, row) in t.iter().enumerate() {
            for (v, got) in row.iter().enumerate() {
                let want = (v as f32 / 255.0 - mean[c] as f32) / std[c] as f32;
                assert_eq!(got.to_bits(), want.to_bits(), "channel {c} value {v}");
            }
        }
    }

    #[test]
    fn zero_or_nan_is_refused() {
        assert!(table([0.5; 3], [0.5, 0.0, 0.5], Mode::AtenU8).is_err());
        assert!(table([f64::NAN, 0.5, 0.5], [0.5; 3], Mode::Pil).is_err());
    }
}
