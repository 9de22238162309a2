//! Format detection from magic bytes, with the same acceptance tests Pillow's plugins use, and
//! names for the image formats we recognise but do not decode (so the error says what it was).

use super::Format;
use crate::error::{KernelError, Result, Unsupported};

/// The formats we decode, by Pillow's `_accept` rules.
pub(crate) fn sniff(data: &[u8]) -> Result<Format> {
    if data.is_empty() {
        return Err(KernelError::UnsupportedFormat(
            "empty input (0 bytes)".into(),
        ));
    }
    if data.starts_with(b"\xff\xd8\xff") {
        return Ok(Format::Jpeg);
    }
    if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Ok(Format::Png);
    }
    if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        return Ok(Format::Gif);
    }
    if data.starts_with(b"BM") {
        return Ok(Format::Bmp);
    }
    if data.starts_with(b"RIFF") && data.get(8..12) == Some(b"WEBP") {
        // Pillow only accepts the three bitstream layouts it knows.
        return match data.get(12..16) {
            Some(b"VP8 " | b"VP8L" | b"VP8X") => Ok(Format::WebP),
            _ => Err(KernelError::UnsupportedFormat(Unsupported {
                detected: Some("WEBP"),
                what: "RIFF/WEBP container without a VP8, VP8L or VP8X chunk".into(),
            })),
        };
    }
    Err(KernelError::UnsupportedFormat(match other_format(data) {
        Some(name) => Unsupported::detected(name),
        None => "unknown format".into(),
    }))
}

/// Well-known image and document formats, named in the error instead of "unknown format".
fn other_format(data: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"II*\x00", "TIFF"),
        (b"MM\x00*", "TIFF"),
        (b"II+\x00", "BigTIFF"),
        (b"MM\x00+", "BigTIFF"),
        (b"\x00\x00\x00\x0cjP  \r\n\x87\n", "JPEG 2000"),
        (b"\xff\x4f\xff\x51", "JPEG 2000 codestream"),
        (b"\x00\x00\x00\x0cJXL \r\n\x87\n", "JPEG XL"),
        (b"\xff\x0a", "JPEG XL"),
        (b"\x00\x00\x01\x00", "ICO"),
        (b"\x00\x00\x02\x00", "CUR"),
        (b"8BPS", "PSD"),
        (b"qoif", "QOI"),
        (b"DDS ", "DDS"),
        (b"icns", "ICNS"),
        (b"%PDF", "PDF"),
        (b"%!PS", "PostScript"),
        (b"\xc5\xd0\xd3\xc6", "EPS"),
        (b"\x76\x2f\x31\x01", "OpenEXR"),
        (b"#?RADIANCE", "Radiance HDR"),
        (b"BPG\xfb", "BPG"),
        (b"FORM", "IFF"),
        (b"RIFF", "RIFF (not WebP)"),
        (b"PK\x03\x04", "ZIP archive"),
        (b"\x1f\x8b", "gzip data"),
    ];
    for (magic, name) in MAGIC {
        if data.starts_with(magic) {
            return Some(name);
        }
    }
    if data.get(4..8) == Some(b"ftyp") {
        return Some(match data.get(8..12) {
            Some(b"avif" | b"avis") => "AVIF",
            Some(b"heic" | b"heix" | b"heim" | b"heis" | b"hevc" | b"hevx" | b"mif1" | b"msf1") => {
                "HEIF"
            }
            _ => "ISO media (ftyp)",
        });
    }
    if data.len() >= 2 && data[0] == b'P' && (b'1'..=b'7').contains(&data[1]) {
        return Some("PNM");
    }
    let text = data.get(..data.len().min(256)).unwrap_or_default();
    let trimmed = text.trim_ascii_start();
    if trimmed.starts_with(b"<svg") || trimmed.starts_with(b"<?xml") {
        return Some("SVG/XML");
    }
    if trimmed.starts_with(b"<!DOCTYPE html") || trimmed.starts_with(b"<html") {
        return Some("HTML");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_it_finds() {
        assert_eq!(sniff(b"\xff\xd8\xff\xe0").ok(), Some(Format::Jpeg));
        assert_eq!(sniff(b"GIF89a....").ok(), Some(Format::Gif));
        let msg = |d: &[u8]| sniff(d).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg(b"").contains("empty"));
        assert!(msg(b"II*\x00\x08\x00").contains("TIFF"));
        assert!(msg(b"\x00\x00\x00\x1cftypavif").contains("AVIF"));
        assert!(msg(b"hello world").contains("unknown format"));
        assert!(msg(b"RIFF\x00\x00\x00\x00WEBPVP8Q").contains("WEBP"));
        let detected = |d: &[u8]| sniff(d).err().and_then(|e| e.format());
        assert_eq!(detected(b"II*\x00\x08\x00"), Some("TIFF"));
        assert_eq!(detected(b"hello world"), None);
    }
}
