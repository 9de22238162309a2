//! Rescaled image sizes (Inkling's `rescale_image_frac` rule, step 2 of the Inkling family's documented algorithm).

/// Scale `(w, h)` by `frac`, optionally capping the upscaled long edge at `cap` (never shrinking
/// an image already above the cap). Sides round half away from zero and stay >= 1.
pub fn scaled_dims(w: u32, h: u32, frac: f64, cap: Option<u32>) -> (u32, u32) {
    let long = w.max(h);
    if long == 0 {
        return (w, h);
    }
    let long_f = f64::from(long);
    let mut target = long_f * frac;
    if let Some(cap) = cap {
        target = target.min(f64::from(cap.max(long)));
    }
    let ratio = target / long_f;
    if ratio == 1.0 {
        return (w, h);
    }
    let side = |s: u32| -> u32 {
        let v = (f64::from(s) * ratio + 0.5).floor();
        if v < 1.0 {
            1
        } else if v >= f64::from(u32::MAX) {
            u32::MAX
        } else {
            v as u32
        }
    };
    (side(w), side(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_vectors() {
        assert_eq!(scaled_dims(80, 60, 0.5, None), (40, 30));
        assert_eq!(scaled_dims(3, 1, 0.1, None), (1, 1));
        assert_eq!(scaled_dims(80, 60, 2.0, None), (160, 120));
        assert_eq!(scaled_dims(80, 60, 2.0, Some(120)), (120, 90));
        assert_eq!(scaled_dims(80, 60, 0.9, Some(40)), (72, 54));
    }
}
