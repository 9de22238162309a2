//! The image size limits, defined once for every kernel and binding: the decoders check them
//! from the header, the resizer caps its output with them, and the Python core reads its
//! defaults from here (`sglang_mm_core._native.DEFAULT_MAX_PIXELS`).

use crate::error::{KernelError, Result};

/// Pillow's decompression-bomb error threshold (2 * 89,478,485 pixels): the default cap on a
/// decoded image and the hard cap on a resize output.
pub const MAX_IMAGE_PIXELS: u64 = 178_956_970;
/// The longest side accepted by default (JPEG's own maximum is 65,500).
pub const MAX_IMAGE_SIDE: u32 = 65_535;

/// The one limit rule: a side over `max_side`, or more than `max_pixels` pixels, is a
/// [`KernelError::LimitExceeded`] naming the `format`, the size and the limit (`limit` is
/// the spec's name for it, `max_image_side` or `max_image_pixels`).
pub fn check_size(
    format: &str,
    width: u64,
    height: u64,
    max_pixels: u64,
    max_side: u64,
) -> Result<()> {
    if width > max_side || height > max_side {
        return Err(KernelError::LimitExceeded {
            limit: "max_image_side",
            max: max_side,
            value: width.max(height),
            message: format!(
                "{format} image of {width}x{height} pixels has a side over the limit of \
                 {max_side} pixels"
            ),
        });
    }
    let pixels = width.saturating_mul(height);
    if pixels > max_pixels {
        return Err(KernelError::LimitExceeded {
            limit: "max_image_pixels",
            max: max_pixels,
            value: pixels,
            message: format!(
                "{format} image of {width}x{height} = {pixels} pixels exceeds the limit of \
                 {max_pixels} pixels"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pillow_bomb_threshold() {
        // PIL.Image.MAX_IMAGE_PIXELS is 89,478,485; Pillow raises above twice that.
        assert_eq!(MAX_IMAGE_PIXELS, 2 * 89_478_485);
    }

    #[test]
    fn the_rule_is_inclusive_and_names_the_limit() {
        assert!(check_size("PNG", 100, 100, 10_000, 100).is_ok());
        let side = check_size("PNG", 101, 1, u64::MAX, 100).unwrap_err();
        assert_eq!(
            side.to_string(),
            "PNG image of 101x1 pixels has a side over the limit of 100 pixels"
        );
        let pixels = check_size("GIF", 100, 101, 10_099, 1000).unwrap_err();
        assert!(matches!(
            pixels,
            KernelError::LimitExceeded {
                limit: "max_image_pixels",
                max: 10_099,
                value: 10_100,
                ..
            }
        ));
        assert_eq!(
            pixels.to_string(),
            "GIF image of 100x101 = 10100 pixels exceeds the limit of 10099 pixels"
        );
        assert!(check_size("BMP", u64::MAX, u64::MAX, u64::MAX, u64::MAX).is_ok());
    }
}
