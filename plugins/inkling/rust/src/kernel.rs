//! One image end to end on the core's feature pipeline: the bf16 table, Inkling's cut of the
//! image ([`crate::rules`]) written by `features::compose` (Lanczos resize, padded HWC
//! patches), and the decode in front of it. Pure Rust with no Python types, so the bindings
//! only convert and release the GIL.

use std::sync::OnceLock;

use mm_kernels::decode::{Alpha, DecodeOptions};
use mm_kernels::features::{self, Arith, Bf16Table, Bf16Values, Recipe, Table, Writer};
use mm_kernels::{KernelError, Par, Result, RgbView};

use crate::rules::{Args, Cut, RESIZE};

/// OpenAI CLIP's normalisation constants (the core's `CLIP_MEAN` / `CLIP_STD`).
const CLIP_MEAN: [f64; 3] = [0.48145466, 0.4578275, 0.40821073];
const CLIP_STD: [f64; 3] = [0.26862954, 0.26130258, 0.27577711];

/// The family's table, built once per process: every step in float32, rounded to bfloat16,
/// padding the arithmetic of the sample `-1` (the reference's `f32(-1/255)`). The family's
/// `features()` declares the same table, so both paths give the same bits.
pub fn table() -> Result<&'static Bf16Table> {
    static TABLE: OnceLock<Bf16Table> = OnceLock::new();
    if let Some(t) = TABLE.get() {
        return Ok(t);
    }
    let t = Table::new(CLIP_MEAN, CLIP_STD, 1.0 / 255.0, Arith::Float32)?
        .with_pad_sample(-1)
        .bf16();
    Ok(TABLE.get_or_init(|| t))
}

/// Flat single-frame bf16 bits `[nph * npw, ps, ps, 3]` plus the cut they were written on.
#[derive(Debug)]
pub struct Patches {
    pub cut: Cut,
    pub bits: Vec<u16>,
}

/// Rescale (when the rule changes the size) and patchify a decoded RGB image.
pub fn process_rgb(img: RgbView<'_>, args: &Args, par: &Par) -> Result<Patches> {
    let cut = Cut::new(img.width, img.height, args)?;
    let recipe = Recipe {
        resize: RESIZE,
        writer: Writer::HwcPatches {
            patch_size: cut.patch_size,
            pad_to: None,
        },
    };
    let enc = Bf16Values(table()?);
    let out = features::compose(img, &[cut.part()], &recipe, &enc, par)?;
    Ok(Patches {
        cut,
        bits: out.data,
    })
}

/// The reference's decode: Pillow's `Image.open(...).convert("RGB")`, no EXIF transpose.
pub fn decode_options() -> DecodeOptions {
    DecodeOptions {
        alpha: Alpha::Drop,
        exif_orientation: false,
        ..DecodeOptions::default()
    }
}

/// Encoded bytes to patches, as the original module's `decode_patchify`: the core's
/// `features::compose_encoded`, so with two threads or more the resize and patching of the top
/// rows overlap the decode of the rest; same bits either way.
pub fn decode_patchify(data: &[u8], args: &Args, par: &Par) -> Result<Patches> {
    let recipe = Recipe {
        resize: RESIZE,
        writer: Writer::HwcPatches {
            patch_size: args.patch_size,
            pad_to: None,
        },
    };
    let enc = Bf16Values(table()?);
    let mut cut = None;
    let plan = |w: usize, h: usize| {
        let c = Cut::new(w, h, args)?;
        cut = Some(c);
        Ok(vec![c.part()])
    };
    let out = features::compose_encoded(data, &decode_options(), plan, &recipe, &enc, par)?;
    let cut = cut.ok_or_else(|| KernelError::InvalidArgument("the image was never cut".into()))?;
    Ok(Patches {
        cut,
        bits: out.data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// The reference's arithmetic, written out: `(f32(v) * f32(1/255) - mean) / std` in
    /// float32, rounded to bfloat16; the pad from `f32(-1/255)`.
    #[test]
    fn table_is_the_references_arithmetic() {
        let t = table().unwrap();
        let inv = (1.0f64 / 255.0) as f32;
        let value =
            |x: f32, c: usize| features::bf16_rne((x - CLIP_MEAN[c] as f32) / CLIP_STD[c] as f32);
        for c in 0..3 {
            for v in 0..256 {
                assert_eq!(t.values()[c][v], value(v as f32 * inv, c), "{c} {v}");
            }
        }
        assert_eq!(t.pad(), Some([0, 1, 2].map(|c| value(-inv, c))));
    }

    #[test]
    fn every_thread_count_writes_the_same_bits() {
        let (w, h, ps) = (37, 23, 5);
        let data = noise(w * h * 3);
        let img = RgbView::new(w, h, &data).unwrap();
        let args = Args::new(ps as i64, None, None).unwrap();
        let t = table().unwrap();
        let one = process_rgb(img, &args, &Par::inline()).unwrap();
        assert_eq!((one.cut.nph, one.cut.npw), (5, 8));
        assert_eq!(one.bits.len(), 5 * 8 * ps * ps * 3);
        for threads in 2..6 {
            let again = process_rgb(img, &args, &Par::new(threads)).unwrap();
            assert_eq!(again.bits, one.bits);
        }
        // Patch (1, 2), pixel (3, 4): source pixel (8, 14).
        let k = ((8 + 2) * ps * ps + 3 * ps + 4) * 3;
        let s = (8 * w + 14) * 3;
        let want = [0, 1, 2].map(|c| t.values()[c][usize::from(data[s + c])]);
        assert_eq!(one.bits[k..k + 3], want);
        // The last column (x0 = 35) has two pixels, then padding.
        let last = ((7 * ps) * ps + 2) * 3;
        assert_eq!(
            Some([one.bits[last], one.bits[last + 1], one.bits[last + 2]]),
            t.pad()
        );
    }

    #[test]
    fn a_rescale_goes_through_the_lanczos_resize() {
        let (w, h) = (31, 17);
        let data = noise(w * h * 3);
        let img = RgbView::new(w, h, &data).unwrap();
        let args = Args::new(8, Some(2.0), None).unwrap();
        let got = process_rgb(img, &args, &Par::new(3)).unwrap();
        let resized = mm_kernels::resize::resize_rgb(
            img,
            62,
            34,
            RESIZE.resample,
            RESIZE.order,
            &Par::inline(),
        )
        .unwrap();
        let plain = Args::new(8, None, None).unwrap();
        let want = process_rgb(resized.view(), &plain, &Par::inline()).unwrap();
        assert_eq!((got.cut.width, got.cut.height), (62, 34));
        assert_eq!(got.cut, want.cut);
        assert_eq!(got.bits, want.bits);
    }
}
