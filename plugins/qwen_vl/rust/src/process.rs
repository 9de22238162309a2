//! One image through the whole family kernel: smart_resize, then bicubic resize (only when the
//! size changes) fused with normalize and patchify. Pure and deterministic; threads only through
//! `Par`.

use mm_kernels::resize::{PassOrder, Resample};
use mm_kernels::{KernelError, Par, Result, RgbView};

use crate::fused::{resize_codes, resize_patchify};
use crate::normalize::{Mode, Normalizer};
use crate::patchify::Patching;
use crate::smart::{smart_resize, Bounds, Variant};

/// Everything the kernel needs, validated once per pipeline.
#[derive(Clone, Debug)]
pub struct Config {
    pub patching: Patching,
    pub bounds: Bounds,
    pub resample: Resample,
    pub order: PassOrder,
    pub norm: Normalizer,
}

/// Settings as the Python `Params` spell them.
pub struct Settings<'a> {
    pub patch_size: usize,
    pub merge_size: usize,
    pub temporal_patch_size: usize,
    pub min_pixels: u64,
    pub max_pixels: u64,
    pub mean: [f64; 3],
    pub std: [f64; 3],
    pub resample: &'a str,
    pub smart_resize: &'a str,
    pub pass_order: &'a str,
}

impl Config {
    pub fn new(s: &Settings<'_>) -> Result<Self> {
        let (resample, mode) = match s.resample {
            "pil" => (Resample::PilBicubic, Mode::Pil),
            "aten_u8" => (Resample::AtenU8, Mode::AtenU8),
            other => {
                return Err(KernelError::InvalidArgument(format!(
                    "unknown resample {other:?} (expected pil or aten_u8)"
                )))
            }
        };
        let patching = Patching {
            patch_size: s.patch_size,
            merge_size: s.merge_size,
            temporal_patch_size: s.temporal_patch_size,
        };
        patching.row_len()?;
        let factor = s
            .patch_size
            .checked_mul(s.merge_size)
            .filter(|&f| f > 0)
            .ok_or_else(|| {
                KernelError::InvalidArgument(format!(
                    "patch_size ({}) * merge_size ({}) must be a positive size",
                    s.patch_size, s.merge_size
                ))
            })?;
        if s.min_pixels > s.max_pixels {
            return Err(KernelError::InvalidArgument(format!(
                "min_pixels ({}) must not exceed max_pixels ({})",
                s.min_pixels, s.max_pixels
            )));
        }
        Ok(Self {
            patching,
            bounds: Bounds {
                factor: factor as u64,
                min_pixels: s.min_pixels,
                max_pixels: s.max_pixels,
                variant: Variant::parse(s.smart_resize)?,
            },
            resample,
            order: PassOrder::parse(s.pass_order)?,
            norm: Normalizer::new(s.mean, s.std, mode)?,
        })
    }
}

/// The kernel's answer for one image.
pub struct Processed {
    /// `[grid_h * grid_w, row_len]` float32, row-major.
    pub values: Vec<f32>,
    pub row_len: usize,
    pub grid_h: usize,
    pub grid_w: usize,
    /// The resized `(height, width)`.
    pub height: usize,
    pub width: usize,
}

/// The resized `(height, width)` for an image of `height x width`.
pub fn target_size(cfg: &Config, height: u64, width: u64) -> Result<(u64, u64)> {
    smart_resize(height, width, &cfg.bounds)
}

pub fn process(cfg: &Config, img: RgbView<'_>, par: &Par) -> Result<Processed> {
    let (th, tw) = smart_resize(img.height as u64, img.width as u64, &cfg.bounds)?;
    let too_big = || KernelError::Limit(format!("resized size {tw}x{th} does not fit in memory"));
    let th = usize::try_from(th).map_err(|_| too_big())?;
    let tw = usize::try_from(tw).map_err(|_| too_big())?;
    let (values, grid_h, grid_w) = resize_patchify(
        img,
        tw,
        th,
        cfg.resample,
        cfg.order,
        &cfg.norm,
        cfg.patching,
        par,
    )?;
    Ok(Processed {
        values,
        row_len: cfg.patching.row_len()?,
        grid_h,
        grid_w,
        height: th,
        width: tw,
    })
}

/// The compact form of one image: `[grid_h * grid_w, 3 * ps * ps]` uint8 codes (the resized
/// pixels in the feature's order, each frame once) that `cfg.norm.table` expands exactly into
/// [`process`]'s values.
pub struct Compact {
    pub codes: Vec<u8>,
    pub row_len: usize,
    pub grid_h: usize,
    pub grid_w: usize,
    pub height: usize,
    pub width: usize,
}

/// [`process`] without the normalize: the codes of its values.
pub fn process_codes(cfg: &Config, img: RgbView<'_>, par: &Par) -> Result<Compact> {
    let (th, tw) = smart_resize(img.height as u64, img.width as u64, &cfg.bounds)?;
    let too_big = || KernelError::Limit(format!("resized size {tw}x{th} does not fit in memory"));
    let th = usize::try_from(th).map_err(|_| too_big())?;
    let tw = usize::try_from(tw).map_err(|_| too_big())?;
    let (codes, grid_h, grid_w) =
        resize_codes(img, tw, th, cfg.resample, cfg.order, cfg.patching, par)?;
    let ps = cfg.patching.patch_size;
    Ok(Compact {
        codes,
        row_len: 3 * ps * ps,
        grid_h,
        grid_w,
        height: th,
        width: tw,
    })
}
