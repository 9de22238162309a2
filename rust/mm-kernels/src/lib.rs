#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod b64;
#[cfg(feature = "decode")]
pub mod decode;
pub mod dims;
pub mod error;
pub mod features;
pub mod feed;
pub mod hash;
pub mod image;
pub mod limits;
pub mod par;
pub mod pct;
pub mod resize;
#[cfg(test)]
mod test_util;

pub use error::{KernelError, Result, Unsupported};
pub use image::{RgbImage, RgbView};
pub use limits::{MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE};
pub use par::Par;
