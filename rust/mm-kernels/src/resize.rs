//! Separable fixed-point resize, bit-exact with Pillow (`pil_lanczos`, `pil_bicubic`) and with
//! torchvision's uint8 antialiased bicubic (`aten_u8`). See `specs/kernels.md`.
//! (Implementation lands with the resize work; the signatures below are the contract.)

use crate::error::{KernelError, Result};
use crate::image::{RgbImage, RgbView};
use crate::par::Par;

/// Which reference the resampler reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resample {
    PilLanczos,
    PilBicubic,
    AtenU8,
}

/// Pass order of the Pillow resamplers (`aten_u8` is always horizontal first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PassOrder {
    /// Pillow >= 13: vertical first when `(h - h') > 0` and `(h - h') > 2 * (w - w')`.
    #[default]
    Pillow13,
    /// Older Pillow: always horizontal first.
    Pillow12,
}

impl Resample {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "pil_lanczos" => Ok(Self::PilLanczos),
            "pil_bicubic" => Ok(Self::PilBicubic),
            "aten_u8" => Ok(Self::AtenU8),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown resample {other:?} (expected pil_lanczos, pil_bicubic or aten_u8)"
            ))),
        }
    }
}

impl PassOrder {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "pillow13" => Ok(Self::Pillow13),
            "pillow12" => Ok(Self::Pillow12),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown pass order {other:?} (expected pillow13 or pillow12)"
            ))),
        }
    }
}

/// Resize `src` to `out_w x out_h`.
pub fn resize_rgb(
    src: RgbView<'_>,
    out_w: usize,
    out_h: usize,
    resample: Resample,
    order: PassOrder,
    par: &Par,
) -> Result<RgbImage> {
    let _ = (src, out_w, out_h, resample, order, par);
    Err(KernelError::InvalidArgument("resize is not implemented yet".into()))
}
