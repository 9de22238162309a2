//! Model-agnostic image kernels shared by the core and every family plugin.
//!
//! Pure Rust (no Python): decode, Pillow-exact resize, content hash, base64, and the one `par`
//! seam through which every fan-out goes. Without the `parallel` feature nothing here spawns a
//! thread, so a host that brings its own pool keeps full control.

pub mod b64;
#[cfg(feature = "decode")]
pub mod decode;
pub mod dims;
pub mod error;
pub mod feed;
pub mod hash;
pub mod image;
pub mod limits;
pub mod par;
pub mod resize;

pub use error::{KernelError, Result, Unsupported};
pub use image::{RgbImage, RgbView};
pub use limits::{MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE};
pub use par::Par;
