//! The mode Pillow opens an image in, read from the header alone.
//!
//! A reference that works on `Image.open(...)` before any `convert` (Kimi K3 resizes in the
//! image's own mode and composites transparency afterwards) treats each mode its own way, so a
//! caller that can only reproduce some of them must know which one it has before it decodes.
//! Each format module answers from what it already parses for its probe; nothing is decoded.

use super::{bmp, gif, jpeg, png, webp, Format};
use crate::error::Result;

/// What Pillow 13's `Image.open` makes of an image, once its pixels are read: the mode, and
/// whether it puts `"transparency"` in the image's `info`.
///
/// The modes the decoders can report: `"1"`, `"L"`, `"P"`, `"RGB"`, `"RGBA"`, `"LA"`,
/// `"CMYK"`, `"I;16"` (see [`SourceMode::MODES`]). `transparency` is a PNG's tRNS chunk (for
/// modes `1`, `L`, `I;16`, `P` and `RGB`; Pillow ignores it on the modes with alpha), wherever
/// it sits in the file, and a GIF's transparent colour index of the first frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SourceMode {
    /// Pillow's mode name.
    pub mode: &'static str,
    /// Whether `"transparency"` is in Pillow's `info` for the image.
    pub transparency: bool,
}

impl SourceMode {
    /// Every mode a decoder can report, in this order.
    pub const MODES: [&'static str; 8] = ["1", "L", "P", "RGB", "RGBA", "LA", "CMYK", "I;16"];

    pub(crate) fn new(mode: &'static str, transparency: bool) -> Self {
        Self { mode, transparency }
    }

    /// Pillow's test for transparency data: an alpha band (`"A" in im.getbands()`) or a
    /// transparency entry (`"transparency" in im.info`).
    pub fn has_alpha(&self) -> bool {
        self.mode.contains('A') || self.transparency
    }

    /// The mode, with `+transparency` appended when Pillow has a transparency entry:
    /// `"RGB"`, `"P+transparency"`.
    pub fn label(&self) -> String {
        if self.transparency {
            format!("{}+transparency", self.mode)
        } else {
            self.mode.to_owned()
        }
    }
}

/// The [`SourceMode`] of `data` and its format, from the header (a PNG's chunks after the
/// image data included, as Pillow reads them when it loads the pixels). A header the decoder
/// cannot read is refused with the decoder's error (an empty image is left to the decode).
pub fn source_mode(data: &[u8]) -> Result<(SourceMode, Format)> {
    let format = Format::detect(data)?;
    let mode = match format {
        Format::Jpeg => jpeg::source_mode(data)?,
        Format::Png => png::source_mode(data)?,
        Format::WebP => webp::source_mode(data)?,
        Format::Gif => gif::source_mode(data)?,
        Format::Bmp => bmp::source_mode(data)?,
    };
    Ok((mode, format))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_alpha() {
        let rgb = SourceMode::new("RGB", false);
        assert_eq!(rgb.label(), "RGB");
        assert!(!rgb.has_alpha());
        let p = SourceMode::new("P", true);
        assert_eq!(p.label(), "P+transparency");
        assert!(p.has_alpha());
        assert!(SourceMode::new("LA", false).has_alpha());
        assert!(SourceMode::new("RGBA", false).has_alpha());
        assert!(!SourceMode::new("CMYK", false).has_alpha());
        assert!(!SourceMode::new("I;16", false).has_alpha());
    }

    #[test]
    fn refuses_what_the_decoder_refuses() {
        assert!(source_mode(b"").is_err());
        assert!(source_mode(b"II*\x00\x08\x00").is_err());
        assert!(source_mode(b"\x89PNG\r\n\x1a\n").is_err());
        assert!(source_mode(b"\xff\xd8\xff\xd9").is_err());
        assert!(source_mode(b"GIF89a\x01\x00").is_err());
    }
}
