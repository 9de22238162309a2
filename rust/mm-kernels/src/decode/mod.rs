//! Encoded bytes -> RGB uint8, bit-exact with Pillow 13.
//!
//! The reference is `Image.open(BytesIO(data))`, `ImageOps.exif_transpose` when
//! `exif_orientation`, then either `.convert("RGB")` (`Alpha::Drop`) or HuggingFace's
//! composite onto white (`Alpha::White`). Each format module reproduces what Pillow's plugin and
//! codec do with the bytes (header quirks, truncation rules, palette handling); the shared
//! pixel arithmetic lives in `convert`, the orientation in `exif` and `orient`.
//!
//! Limits are checked from the header, before any pixel buffer is allocated.

mod bmp;
mod convert;
mod exif;
mod gif;
mod jpeg;
mod limits;
mod mode;
mod orient;
mod png;
mod probe;
mod webp;

use crate::error::{KernelError, Result};
use crate::feed::{RowFeed, RowWriter};
use crate::image::RgbImage;
use crate::par::Par;
pub use mode::{source_mode, SourceMode};

/// How an alpha band or a transparency entry is turned into RGB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Alpha {
    /// Composite onto opaque white with Pillow's integer `alpha_composite` (HuggingFace).
    #[default]
    White,
    /// Pillow's `.convert("RGB")`: alpha discarded.
    Drop,
}

impl Alpha {
    /// The mode named `white` or `drop`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "white" => Ok(Self::White),
            "drop" => Ok(Self::Drop),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown alpha mode {other:?} (expected white or drop)"
            ))),
        }
    }
}

/// Pillow's decompression-bomb error threshold ([`crate::limits::MAX_IMAGE_PIXELS`]).
pub const DEFAULT_MAX_PIXELS: u64 = crate::limits::MAX_IMAGE_PIXELS;
/// Largest side accepted by default ([`crate::limits::MAX_IMAGE_SIDE`]).
pub const DEFAULT_MAX_SIDE: u32 = crate::limits::MAX_IMAGE_SIDE;

/// How to decode: the spec's `decode` options and `limits`. The default is HuggingFace's
/// `load_image` orientation with `convert_to_rgb`'s alpha, and Pillow's bomb threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    /// What becomes of transparency.
    pub alpha: Alpha,
    /// Apply the EXIF orientation (1-8) first, as `ImageOps.exif_transpose` does.
    pub exif_orientation: bool,
    /// Largest image accepted, in pixels, checked from the header before any allocation.
    pub max_pixels: u64,
    /// Longest side accepted, checked from the header as well.
    pub max_side: u32,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            alpha: Alpha::White,
            exif_orientation: true,
            max_pixels: DEFAULT_MAX_PIXELS,
            max_side: DEFAULT_MAX_SIDE,
        }
    }
}

/// The container formats we recognise by their magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JPEG (baseline, progressive; gray, YCbCr, CMYK, YCCK), through libjpeg-turbo.
    Jpeg,
    /// PNG of every layout Pillow opens (1, 2, 4, 8 and 16-bit samples), interlaced or not.
    Png,
    /// WebP, lossy and lossless, through libwebp.
    WebP,
    /// GIF, first frame.
    Gif,
    /// BMP.
    Bmp,
}

impl Format {
    /// The name used in error messages (Pillow's format names).
    pub fn name(self) -> &'static str {
        match self {
            Self::Jpeg => "JPEG",
            Self::Png => "PNG",
            Self::WebP => "WebP",
            Self::Gif => "GIF",
            Self::Bmp => "BMP",
        }
    }

    /// Detect the format from the leading bytes; other known formats and unknown bytes are an
    /// `UnsupportedFormat` error naming what was found.
    pub fn detect(data: &[u8]) -> Result<Self> {
        probe::sniff(data)
    }
}

/// A decoded image before orientation: RGB pixels plus the EXIF orientation (1..=8) that
/// `ImageOps.exif_transpose` would apply.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub image: RgbImage,
    pub orientation: u8,
}

impl Header {
    /// The header of a non-empty image of a format that carries no orientation.
    pub(crate) fn unrotated(format: Format, width: u32, height: u32) -> Result<Self> {
        limits::non_empty(format, width.into(), height.into())?;
        Ok(Self {
            width,
            height,
            orientation: 1,
        })
    }
}

/// Decode `data` to RGB, checking the limits from the header before any pixel is decoded.
pub fn decode_rgb(data: &[u8], opts: &DecodeOptions) -> Result<RgbImage> {
    let decoded = match Format::detect(data)? {
        Format::Jpeg => jpeg::decode(data, opts)?,
        Format::Png => png::decode(data, opts)?,
        Format::WebP => webp::decode(data, opts)?,
        Format::Gif => gif::decode(data, opts)?,
        Format::Bmp => bmp::decode(data, opts)?,
    };
    if opts.exif_orientation {
        Ok(orient::apply(decoded.image, decoded.orientation))
    } else {
        Ok(decoded.image)
    }
}

/// A decode whose rows a [`RowFeed`] receives as the decoder produces them (see
/// [`decode_rgb_rows`]).
pub struct RowDecode<'a> {
    data: &'a [u8],
    width: usize,
    height: usize,
    rows: Rows<'a>,
}

/// Which decoder fills the feed row by row.
enum Rows<'a> {
    /// None: the image was decoded whole up front and the feed is already complete.
    Done,
    Jpeg,
    Png(png::RowPlan<'a>),
}

/// [`decode_rgb`] row by row: the header is checked now (same errors) and a feed of
/// `width x height` RGB rows returned with the decode that fills it ([`RowDecode::run`]),
/// so other threads can start on the top rows while the rest decode. Baseline and progressive
/// JPEGs (RGB or grayscale) and non-interlaced PNGs stream when there is no orientation to
/// apply (see [`stream_size`]); every other image is decoded whole here and its feed comes back
/// complete. Same pixels and errors as `decode_rgb` either way.
pub fn decode_rgb_rows<'a>(
    data: &'a [u8],
    opts: &DecodeOptions,
) -> Result<(RowFeed, RowDecode<'a>)> {
    let format = Format::detect(data)?;
    let streamed = match format {
        Format::Jpeg => jpeg::stream_header(data, opts)?.map(|size| (size, Rows::Jpeg)),
        Format::Png => png::stream_header(data, opts)?.map(|(size, plan)| (size, Rows::Png(plan))),
        _ => None,
    };
    if let Some(((w, h), rows)) = streamed {
        let (width, height) = (w as usize, h as usize);
        limits::buffer_len(format, w.into(), h.into(), 3)?;
        let decode = RowDecode {
            data,
            width,
            height,
            rows,
        };
        // The decoders write every row before it is published: no need to zero them first.
        return Ok((RowFeed::unfilled(height, width * 3)?, decode));
    }
    let img = decode_rgb(data, opts)?;
    let decode = RowDecode {
        data,
        width: img.width,
        height: img.height,
        rows: Rows::Done,
    };
    Ok((RowFeed::complete(img.data, img.width * 3), decode))
}

/// `Some((width, height))` when [`decode_rgb_rows`] would stream the rows of `data` under
/// `opts` (a JPEG whose rows come out of libjpeg final: RGB or grayscale, no orientation to
/// apply; a PNG that is not interlaced and has no orientation to apply), from the header (and
/// for a PNG the chunks after its image data, as [`image_dimensions`] reads them), checked as
/// [`decode_rgb`] checks it (the same errors); `None` for every other image, which is decoded
/// whole.
pub fn stream_size(data: &[u8], opts: &DecodeOptions) -> Result<Option<(u32, u32)>> {
    match Format::detect(data)? {
        Format::Jpeg => jpeg::stream_header(data, opts),
        Format::Png => Ok(png::stream_header(data, opts)?.map(|(size, _)| size)),
        _ => Ok(None),
    }
}

impl RowDecode<'_> {
    /// Width of the decoded (upright) image.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height of the decoded (upright) image.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Whether the rows arrive as they are decoded (false: the feed came back complete).
    pub fn streams(&self) -> bool {
        !matches!(self.rows, Rows::Done)
    }

    /// Decode into the writer of the feed `decode_rgb_rows` returned with `self` (anything else
    /// is refused), publishing rows as they are final. On an error (e.g. data
    /// truncated mid-scan) the writer is dropped with rows unpublished, which releases every
    /// reader still waiting. Once `par`'s cancel flag is set the decode stops at its next batch
    /// of rows with [`KernelError::Cancelled`].
    pub fn run(self, mut writer: RowWriter<'_>, par: &Par<'_>) -> Result<()> {
        if !self.streams() {
            return Ok(());
        }
        if writer.published() != 0 || writer.len() != self.width * self.height * 3 {
            return Err(KernelError::InvalidArgument(
                "a row decode needs the fresh feed decode_rgb_rows returned with it".into(),
            ));
        }
        let (format, done) = match &self.rows {
            Rows::Done => return Ok(()),
            Rows::Jpeg => {
                let (w, h) = (self.width as u32, self.height as u32);
                jpeg::decode_rows(self.data, w, h, &mut writer, par)?;
                (Format::Jpeg, writer.published())
            }
            Rows::Png(plan) => {
                png::decode_rows(self.data, plan, &mut writer, par)?;
                (Format::Png, writer.published())
            }
        };
        if done != writer.rows() {
            return Err(bad(
                format,
                "the frame header does not match the image data",
            ));
        }
        Ok(())
    }
}

/// `(width, height)` from the header alone, after EXIF orientation when `exif_orientation`.
pub fn image_dimensions(data: &[u8], exif_orientation: bool) -> Result<(u32, u32)> {
    let header = match Format::detect(data)? {
        Format::Jpeg => jpeg::probe(data)?,
        Format::Png => png::probe(data)?,
        Format::WebP => webp::probe(data)?,
        Format::Gif => gif::probe(data)?,
        Format::Bmp => bmp::probe(data)?,
    };
    let (w, h) = (header.width, header.height);
    if exif_orientation && orient::swaps_axes(header.orientation) {
        Ok((h, w))
    } else {
        Ok((w, h))
    }
}

/// What a header probe learns without decoding pixels.
pub(crate) struct Header {
    pub width: u32,
    pub height: u32,
    pub orientation: u8,
}

/// A `Decode` error for `format`.
pub(crate) fn bad(format: Format, reason: impl Into<String>) -> KernelError {
    KernelError::Decode {
        format: format.name(),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod stream_tests;
#[cfg(test)]
pub(crate) mod test_jpeg;
#[cfg(test)]
pub(crate) mod test_png;
#[cfg(test)]
mod tests;
