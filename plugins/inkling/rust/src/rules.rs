//! Inkling's own rules, decided from an image's size alone: the argument checks, the rescale
//! rule, the patch grid and their limits. The pixel work they describe is the core's feature
//! pipeline (`mm_kernels::features`); the family's `plan` states the same rules in Python.

use mm_kernels::dims;
use mm_kernels::features::{Part, Resize};
use mm_kernels::resize::{PassOrder, Resample};
use mm_kernels::{KernelError, Result};

/// Most pixels a rescaled image may have (Pillow's bomb threshold, as for decoded images), so a
/// huge `rescale_frac` is refused before the resize allocates.
pub const MAX_RESCALED_PIXELS: u64 = mm_kernels::MAX_IMAGE_PIXELS;

/// Most padded grid pixels (`nph * ps * npw * ps`) one image may produce: twice Pillow's bomb
/// threshold, so the largest decodable image still fits while a giant `patch_size` is refused
/// before anything is allocated.
pub const MAX_GRID_PIXELS: u64 = 2 * mm_kernels::MAX_IMAGE_PIXELS;

/// The reference's resize: Pillow's LANCZOS, Pillow 13 pass order.
pub const RESIZE: Resize = Resize {
    resample: Resample::PilLanczos,
    order: PassOrder::Pillow13,
};

/// Validated arguments of one call: the patch size and the rescale rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Args {
    pub patch_size: usize,
    pub frac: Option<f64>,
    pub cap: Option<u32>,
}

impl Args {
    /// Check the raw Python-side values with the rules of `docs/families/inkling.md` (the same
    /// rules the spec's `Params` enforce), naming the offending value.
    pub fn new(patch_size: i64, frac: Option<f64>, cap: Option<i64>) -> Result<Self> {
        let bad = |msg: String| Err(KernelError::InvalidArgument(msg));
        let patch_size = match usize::try_from(patch_size) {
            Ok(ps) if ps > 0 => ps,
            _ => {
                return bad(format!(
                    "patch_size must be greater than zero, got {patch_size}"
                ))
            }
        };
        if let Some(f) = frac {
            if !f.is_finite() || f <= 0.0 {
                return bad(format!(
                    "rescale_frac must be finite and greater than zero, got {f}"
                ));
            }
        }
        let cap = match cap {
            None => None,
            Some(c) => {
                let Ok(c32) = u32::try_from(c) else {
                    return bad(format!("rescale_cap must be in 1..={}, got {c}", u32::MAX));
                };
                if c32 == 0 {
                    return bad(format!("rescale_cap must be greater than zero, got {c}"));
                }
                match frac {
                    Some(f) if f > 1.0 => {}
                    other => {
                        let f = other.map_or("None".to_string(), |f| f.to_string());
                        return bad(format!(
                            "rescale_cap={c} caps upscaling and needs rescale_frac above 1, \
                             got rescale_frac={f}"
                        ));
                    }
                }
                Some(c32)
            }
        };
        Ok(Self {
            patch_size,
            frac,
            cap,
        })
    }

    /// The size the image is resized to before patching (unchanged without a fraction).
    pub fn scaled_size(&self, width: usize, height: usize) -> Result<(usize, usize)> {
        let Some(frac) = self.frac else {
            return Ok((width, height));
        };
        let side = |s: usize| {
            u32::try_from(s).map_err(|_| {
                KernelError::InvalidArgument(format!("image side {s} is too large to rescale"))
            })
        };
        let (w, h) = dims::scaled_dims(side(width)?, side(height)?, frac, self.cap);
        Ok((w as usize, h as usize))
    }
}

/// The patch grid of an `h x w` image: `ceil(h / ps)` rows and `floor(w / ps) + 1` columns
/// (the model always sees one more column than `w / ps`, a full pad column when `ps` divides
/// `w`).
pub fn grid(height: usize, width: usize, ps: usize) -> (usize, usize) {
    (height.div_ceil(ps), width / ps + 1)
}

/// What a decoded image becomes: the size its patches are cut from (after the rescale) and
/// the grid, after every size check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    pub width: usize,
    pub height: usize,
    pub nph: usize,
    pub npw: usize,
    pub patch_size: usize,
}

impl Cut {
    /// The cut of a decoded `width x height` image under `args`; an empty image is an
    /// [`KernelError::InvalidArgument`], a rescale or grid over its limit a
    /// [`KernelError::Limit`].
    pub fn new(width: usize, height: usize, args: &Args) -> Result<Self> {
        if width == 0 || height == 0 {
            return Err(KernelError::InvalidArgument(format!(
                "cannot cut patches from an empty {width}x{height} image"
            )));
        }
        let (w, h) = args.scaled_size(width, height)?;
        if (w, h) != (width, height) && (w as u64).saturating_mul(h as u64) > MAX_RESCALED_PIXELS {
            return Err(KernelError::Limit(format!(
                "rescaling {width}x{height} by {:?} gives {w}x{h}, over the limit of \
                 {MAX_RESCALED_PIXELS} pixels",
                args.frac.unwrap_or(1.0)
            )));
        }
        let ps = args.patch_size;
        let (nph, npw) = grid(h, w, ps);
        let grid_pixels = (nph as u64)
            .checked_mul(npw as u64)
            .and_then(|n| n.checked_mul(ps as u64))
            .and_then(|n| n.checked_mul(ps as u64));
        if grid_pixels.is_none_or(|n| n > MAX_GRID_PIXELS) {
            return Err(KernelError::Limit(format!(
                "a {nph}x{npw} grid of {ps}x{ps} patches exceeds the limit of {MAX_GRID_PIXELS} \
                 output pixels"
            )));
        }
        Ok(Self {
            width: w,
            height: h,
            nph,
            npw,
            patch_size: ps,
        })
    }

    /// The one part the core's `HwcPatches` writer cuts: the whole image resized to the
    /// scaled size, padded on the right and bottom to the grid.
    pub fn part(&self) -> Part {
        let ps = self.patch_size;
        Part {
            pad_to: Some((self.npw * ps, self.nph * ps)),
            ..Part::resized(self.width, self.height)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_rules() {
        assert!(Args::new(40, Some(2.0), Some(2048)).is_ok());
        assert!(Args::new(40, None, None).is_ok());
        for (ps, frac, cap) in [
            (0, None, None),
            (-1, None, None),
            (40, Some(-1.0), None),
            (40, Some(0.0), None),
            (40, Some(f64::NAN), None),
            (40, Some(f64::INFINITY), None),
            (40, None, Some(2048)),
            (40, Some(1.0), Some(2048)),
            (40, Some(2.0), Some(0)),
            (40, Some(2.0), Some(i64::MAX)),
        ] {
            assert!(
                matches!(
                    Args::new(ps, frac, cap),
                    Err(KernelError::InvalidArgument(_))
                ),
                "{ps} {frac:?} {cap:?}"
            );
        }
    }

    #[test]
    fn scaled_size_follows_the_spec_vectors() {
        let a = Args::new(40, Some(2.0), Some(120)).unwrap();
        assert_eq!(a.scaled_size(80, 60).unwrap(), (120, 90));
        let a = Args::new(40, Some(2.0), Some(2048)).unwrap();
        assert_eq!(a.scaled_size(1920, 1080).unwrap(), (2048, 1152));
        let a = Args::new(40, None, None).unwrap();
        assert_eq!(a.scaled_size(7, 5).unwrap(), (7, 5));
    }

    #[test]
    fn grid_has_one_extra_column() {
        assert_eq!(grid(1, 1, 40), (1, 1));
        assert_eq!(grid(40, 40, 40), (1, 2));
        assert_eq!(grid(41, 39, 40), (2, 1));
        assert_eq!(grid(80, 120, 40), (2, 4));
    }

    #[test]
    fn the_cut_pads_the_scaled_size_to_the_grid() {
        let cut = Cut::new(60, 45, &Args::new(40, Some(2.0), Some(2048)).unwrap()).unwrap();
        assert_eq!((cut.width, cut.height, cut.nph, cut.npw), (120, 90, 3, 4));
        let part = cut.part();
        assert_eq!((part.size, part.pad_to), ((120, 90), Some((160, 120))));
        assert_eq!((part.source, part.crop), (None, None));
    }

    #[test]
    fn refuses_empty_images_and_giant_grids_and_rescales() {
        let plain = Args::new(4, None, None).unwrap();
        assert!(matches!(
            Cut::new(0, 3, &plain),
            Err(KernelError::InvalidArgument(_))
        ));
        let giant = Args::new(1 << 20, None, None).unwrap();
        assert!(matches!(Cut::new(1, 1, &giant), Err(KernelError::Limit(_))));
        let huge = Args::new(40, Some(1e6), None).unwrap();
        let err = Cut::new(10, 10, &huge).unwrap_err();
        assert!(err.to_string().contains("gives 10000000x10000000"), "{err}");
    }
}
