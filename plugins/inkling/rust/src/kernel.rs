//! One image end to end: argument checks, the rescale rule, Pillow-exact Lanczos, the patch
//! grid. Pure Rust with no Python types, so the bindings only convert and release the GIL.

use mm_kernels::decode::{self, Alpha, DecodeOptions};
use mm_kernels::resize::{PassOrder, Resample, ResizePlan};
use mm_kernels::{dims, KernelError, Par, Result, RgbView};

use crate::lut::Tables;
use crate::patchify::{patchify, patchify_codes, Patches};

/// Most pixels a rescaled image may have (Pillow's bomb threshold, as for decoded images), so a
/// huge `rescale_frac` is refused before the resize allocates.
pub const MAX_RESCALED_PIXELS: u64 = mm_kernels::MAX_IMAGE_PIXELS;

/// Validated arguments of one call: the patch size and the rescale rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Args {
    pub patch_size: usize,
    pub frac: Option<f64>,
    pub cap: Option<u32>,
}

impl Args {
    /// Check the raw Python-side values with the rules of `docs/families/inkling.md` (the same rules
    /// the spec's `Params` enforce), naming the offending value.
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

/// The resize [`process_rgb`] does to a `width x height` image: the size patches are cut from
/// and the plan (`None` when the rule keeps the size), with its errors in its order.
pub fn plan_for(
    width: usize,
    height: usize,
    args: &Args,
) -> Result<(usize, usize, Option<ResizePlan>)> {
    let (w, h) = args.scaled_size(width, height)?;
    if (w, h) == (width, height) {
        return Ok((w, h, None));
    }
    if (w as u64).saturating_mul(h as u64) > MAX_RESCALED_PIXELS {
        return Err(KernelError::Limit(format!(
            "rescaling {width}x{height} by {:?} gives {w}x{h}, over the limit of \
             {MAX_RESCALED_PIXELS} pixels",
            args.frac.unwrap_or(1.0)
        )));
    }
    let plan = ResizePlan::new(
        width,
        height,
        w,
        h,
        Resample::PilLanczos,
        PassOrder::Pillow13,
    )?;
    Ok((w, h, Some(plan)))
}

/// Rescale (when the rule changes the size) and patchify a decoded RGB image.
pub fn process_rgb(img: RgbView<'_>, args: &Args, tables: &Tables, par: &Par) -> Result<Patches> {
    match plan_for(img.width, img.height, args)? {
        (_, _, None) => patchify(img, args.patch_size, tables, par),
        (_, _, Some(plan)) => {
            let resized = plan.run(img, par)?;
            patchify(resized.view(), args.patch_size, tables, par)
        }
    }
}

/// [`process_rgb`] in the compact form: `(height, width, nph, npw, codes)`, the codes of
/// [`crate::patchify::patchify_codes`].
pub fn process_codes(
    img: RgbView<'_>,
    args: &Args,
    par: &Par,
) -> Result<(usize, usize, usize, usize, Vec<u8>)> {
    let resized;
    let view = match plan_for(img.width, img.height, args)? {
        (_, _, None) => img,
        (_, _, Some(plan)) => {
            resized = plan.run(img, par)?;
            resized.view()
        }
    };
    let (nph, npw, codes) = patchify_codes(view, args.patch_size, par)?;
    Ok((view.height, view.width, nph, npw, codes))
}

/// The reference's decode: Pillow's `Image.open(...).convert("RGB")`, no EXIF transpose.
pub fn decode_options() -> DecodeOptions {
    DecodeOptions {
        alpha: Alpha::Drop,
        exif_orientation: false,
        ..DecodeOptions::default()
    }
}

/// Encoded bytes to patches, as the original module's `decode_patchify`. With two threads or
/// more the decode overlaps the resize and patching ([`crate::stream`]); same bits either way.
pub fn decode_patchify(data: &[u8], args: &Args, tables: &Tables, par: &Par) -> Result<Patches> {
    if par.threads() >= 2 {
        return crate::stream::decode_patchify(data, args, tables, par);
    }
    let img = decode::decode_rgb(data, &decode_options())?;
    process_rgb(img.view(), args, tables, par)
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
}
