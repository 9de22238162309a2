//! Encoded bytes -> RGB uint8, bit-exact with Pillow (see `specs/kernels.md`, "Decode").
//! (Implementation lands with the decode work; the signatures below are the contract.)

use crate::error::{KernelError, Result};
use crate::image::RgbImage;

/// How an alpha band or a transparency entry is turned into RGB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Alpha {
    /// Composite onto opaque white with Pillow's integer `alpha_composite` (HuggingFace).
    #[default]
    White,
    /// Pillow's `.convert("RGB")`: alpha discarded.
    Drop,
}

impl Alpha {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "white" => Ok(Self::White),
            "drop" => Ok(Self::Drop),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown alpha mode {other:?} (expected white or drop)"
            ))),
        }
    }
}

/// Pillow's decompression-bomb error threshold (2 * 89,478,485 pixels).
pub const DEFAULT_MAX_PIXELS: u64 = 178_956_970;
/// Largest side accepted by default (JPEG's own maximum is 65,500).
pub const DEFAULT_MAX_SIDE: u32 = 65_535;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    pub alpha: Alpha,
    pub exif_orientation: bool,
    pub max_pixels: u64,
    pub max_side: u32,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            alpha: Alpha::White,
            exif_orientation: true,
            max_pixels: DEFAULT_MAX_PIXELS,
            max_side: DEFAULT_MAX_SIDE,
        }
    }
}

/// The container formats we recognise by their magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jpeg,
    Png,
    WebP,
    Gif,
    Bmp,
}

/// Decode `data` to RGB, checking the limits from the header before any pixel is decoded.
pub fn decode_rgb(data: &[u8], opts: &DecodeOptions) -> Result<RgbImage> {
    let _ = (data, opts);
    Err(KernelError::UnsupportedFormat("decode is not implemented yet".into()))
}

/// `(width, height)` from the header alone, after EXIF orientation when `exif_orientation`.
pub fn image_dimensions(data: &[u8], exif_orientation: bool) -> Result<(u32, u32)> {
    let _ = (data, exif_orientation);
    Err(KernelError::UnsupportedFormat("probe is not implemented yet".into()))
}
