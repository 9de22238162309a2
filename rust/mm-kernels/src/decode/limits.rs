//! Size checks made from the header, before a pixel buffer exists, so a small file declaring a
//! huge image costs nothing but its header.

use super::{bad, DecodeOptions, Format};
use crate::error::{KernelError, Result};

/// Refuse empty images: Pillow cannot open them either.
pub(crate) fn non_empty(format: Format, width: u64, height: u64) -> Result<()> {
    if width == 0 || height == 0 {
        return Err(bad(
            format,
            format!("image has zero size ({width}x{height})"),
        ));
    }
    Ok(())
}

/// Refuse empty images and images over the limits (the crate's one rule, [`crate::limits`]).
pub(crate) fn check(format: Format, width: u64, height: u64, opts: &DecodeOptions) -> Result<()> {
    non_empty(format, width, height)?;
    crate::limits::check_size(
        format.name(),
        width,
        height,
        opts.max_pixels,
        u64::from(opts.max_side),
    )
}

/// A zeroed buffer of `len` bytes, or a `Limit` error if the allocation fails (instead of an
/// abort); `len` is always bounded by a limit check made before.
pub(crate) fn alloc(len: usize) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(len)
        .map_err(|_| KernelError::Limit(format!("cannot allocate {len} bytes for the image")))?;
    buf.resize(len, 0);
    Ok(buf)
}

/// An empty buffer with room for `len` bytes, for a decoder that writes every one of them
/// (then sets the length) or fails; a `Limit` error if the allocation fails.
pub(crate) fn alloc_unfilled(len: usize) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(len)
        .map_err(|_| KernelError::Limit(format!("cannot allocate {len} bytes for the image")))?;
    Ok(buf)
}

/// `width * height * channels` as a `usize`, for sizes that passed [`check`].
pub(crate) fn buffer_len(format: Format, width: u64, height: u64, channels: u64) -> Result<usize> {
    width
        .checked_mul(height)
        .and_then(|p| p.checked_mul(channels))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            bad(
                format,
                format!("image of {width}x{height} is too large to address"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::super::DEFAULT_MAX_PIXELS;
    use super::*;

    fn opts(max_pixels: u64, max_side: u32) -> DecodeOptions {
        DecodeOptions {
            max_pixels,
            max_side,
            ..DecodeOptions::default()
        }
    }

    #[test]
    fn limits_name_the_dimensions_and_the_limit() {
        let err = check(Format::Png, 20000, 20000, &DecodeOptions::default()).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(
            err,
            KernelError::LimitExceeded {
                limit: "max_image_pixels",
                max: 178956970,
                value: 400000000,
                ..
            }
        ));
        assert!(
            msg.contains("20000x20000") && msg.contains(&DEFAULT_MAX_PIXELS.to_string()),
            "{msg}"
        );

        let err = check(Format::Jpeg, 70000, 1, &DecodeOptions::default()).unwrap_err();
        assert!(err.to_string().contains("70000x1") && err.to_string().contains("65535"));
        assert!(matches!(
            err,
            KernelError::LimitExceeded {
                limit: "max_image_side",
                max: 65535,
                value: 70000,
                ..
            }
        ));

        assert!(check(Format::Gif, 100, 100, &opts(10_000, 100)).is_ok());
        assert!(check(Format::Gif, 101, 100, &opts(1 << 40, 100)).is_err());
        assert!(check(Format::Gif, 100, 101, &opts(10_099, 1000)).is_err());
    }

    #[test]
    fn zero_size_is_a_decode_error() {
        let err = check(Format::Bmp, 0, 5, &DecodeOptions::default()).unwrap_err();
        assert!(matches!(err, KernelError::Decode { format: "BMP", .. }));
    }
}
