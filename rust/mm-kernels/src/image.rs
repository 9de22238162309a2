//! Owned and borrowed interleaved RGB uint8 images (row-major, `[h, w, 3]`).

use crate::error::{KernelError, Result};

/// An owned RGB image; `data.len() == width * height * 3`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbImage {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `height * width * 3` bytes, row-major RGB.
    pub data: Vec<u8>,
}

/// A borrowed RGB image, e.g. over a numpy buffer, so kernels never copy their input.
#[derive(Clone, Copy, Debug)]
pub struct RgbView<'a> {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `height * width * 3` bytes, row-major RGB.
    pub data: &'a [u8],
}

impl RgbImage {
    /// Wrap `data`; refused unless it is exactly `width * height * 3` bytes.
    pub fn new(width: usize, height: usize, data: Vec<u8>) -> Result<Self> {
        check_len(width, height, data.len())?;
        Ok(Self {
            width,
            height,
            data,
        })
    }

    /// Borrow the pixels as an [`RgbView`].
    pub fn view(&self) -> RgbView<'_> {
        RgbView {
            width: self.width,
            height: self.height,
            data: &self.data,
        }
    }
}

impl<'a> RgbView<'a> {
    /// Borrow `data`; refused unless it is exactly `width * height * 3` bytes.
    pub fn new(width: usize, height: usize, data: &'a [u8]) -> Result<Self> {
        check_len(width, height, data.len())?;
        Ok(Self {
            width,
            height,
            data,
        })
    }

    /// Copy the pixels into an owned [`RgbImage`].
    pub fn to_owned_image(&self) -> RgbImage {
        RgbImage {
            width: self.width,
            height: self.height,
            data: self.data.to_vec(),
        }
    }
}

fn check_len(width: usize, height: usize, len: usize) -> Result<()> {
    let want = width.checked_mul(height).and_then(|p| p.checked_mul(3));
    if want != Some(len) {
        return Err(KernelError::InvalidArgument(format!(
            "RGB buffer of {len} bytes does not match {width}x{height}x3"
        )));
    }
    Ok(())
}
