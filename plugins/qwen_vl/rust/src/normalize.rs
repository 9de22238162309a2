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

    #[test]
    fn zero_std_is_refused() {
        assert!(table([0.5; 3], [0.5, 0.0, 0.5], Mode::AtenU8).is_err());
    }
}
