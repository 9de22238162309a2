//! The metadata chunks that `getexif` reads for the orientation: eXIf, the "exif" tEXt key,
//! ImageMagick's "Raw profile type exif" hex dump and the XMP packet (tEXt, zTXt or iTXt),
//! with Pillow's rules for which wins and its cap on inflated text.

use flate2::{Decompress, FlushDecompress, Status};

use super::chunks::Info;
use super::F;
use crate::decode::{bad, exif};
use crate::error::Result;

/// Pillow's `MAX_TEXT_CHUNK`: the most a compressed text chunk may inflate to.
const MAX_TEXT_CHUNK: usize = 1 << 20;

#[derive(Default)]
pub(super) struct Metadata {
    pub(super) exif: Option<Vec<u8>>,
    raw_profile_exif: Option<Vec<u8>>,
    xmp_text: Option<Vec<u8>>,
    xmp_raw: Option<Vec<u8>>,
}

impl Metadata {
    pub(super) fn orientation(&self) -> u8 {
        let exif = match (&self.exif, &self.raw_profile_exif) {
            (Some(e), _) => Some(e.clone()),
            // Unreadable hex is malformed EXIF: ignored.
            (None, Some(text)) => Some(raw_profile_hex(text).unwrap_or_default()),
            (None, None) => None,
        };
        let xmp = match (&self.xmp_text, &self.xmp_raw) {
            (Some(t), _) if !t.is_empty() => Some(t.as_slice()),
            (_, Some(r)) => Some(r.as_slice()),
            _ => None,
        };
        exif::orientation(exif.as_deref(), xmp)
    }
}

impl Info<'_> {
    pub(super) fn handle_text(&mut self, s: &[u8]) {
        let (k, v) = split_nul(s).unwrap_or((s, &[]));
        self.text_value(k, v.to_vec(), true);
    }

    pub(super) fn handle_ztxt(&mut self, s: &[u8]) -> Result<()> {
        let (k, v) = split_nul(s).unwrap_or((s, &[]));
        let method = v.first().copied().unwrap_or(0);
        if method != 0 {
            return Err(bad(
                F,
                format!("unknown compression method {method} in zTXt chunk"),
            ));
        }
        if is_interesting_key(k) {
            // Pillow keeps what inflates before an error (and errors on over-large text).
            let text = inflate_text(v.get(1..).unwrap_or_default())?.unwrap_or_default();
            self.text_value(k, text, false);
        }
        Ok(())
    }

    pub(super) fn handle_itxt(&mut self, s: &[u8]) {
        let Some((k, r)) = split_nul(s) else { return };
        if r.len() < 2 {
            return;
        }
        let (cf, cm, r) = (r[0], r[1], &r[2..]);
        let Some((_lang, r)) = split_nul(r) else {
            return;
        };
        let Some((_tk, v)) = split_nul(r) else { return };
        if !is_interesting_key(k) {
            return;
        }
        let v = if cf != 0 {
            if cm != 0 {
                return;
            }
            match inflate_text(v) {
                Ok(Some(text)) => text,
                _ => return,
            }
        } else {
            v.to_vec()
        };
        if k == b"XML:com.adobe.xmp" {
            self.meta.xmp_raw = Some(v.clone());
        }
        if std::str::from_utf8(&v).is_ok() {
            self.text_value(k, v, false);
        }
    }

    /// `info[key] = value` for the keys `getexif` looks at.
    fn text_value(&mut self, key: &[u8], value: Vec<u8>, is_text_chunk: bool) {
        match key {
            b"exif" if is_text_chunk => self.meta.exif = Some(value),
            b"Raw profile type exif" => self.meta.raw_profile_exif = Some(value),
            b"XML:com.adobe.xmp" => self.meta.xmp_text = Some(value),
            _ => {}
        }
    }
}

fn is_interesting_key(k: &[u8]) -> bool {
    k == b"Raw profile type exif" || k == b"XML:com.adobe.xmp"
}

fn split_nul(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|&b| b == 0)?;
    Some((&s[..i], &s[i + 1..]))
}

/// `_safe_zlib_decompress`: Ok(None) for a zlib error, Err when it would exceed the cap.
fn inflate_text(data: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut z = Decompress::new(true);
    let mut out = Vec::with_capacity(data.len().saturating_mul(4).min(MAX_TEXT_CHUNK) + 1);
    loop {
        let before = (z.total_in(), z.total_out());
        let input = &data[(z.total_in() as usize).min(data.len())..];
        if out.len() == out.capacity() {
            if out.len() >= MAX_TEXT_CHUNK {
                return Err(bad(F, "decompressed text chunk larger than MAX_TEXT_CHUNK"));
            }
            out.reserve((out.len() + 4096).min(MAX_TEXT_CHUNK + 1 - out.len()));
        }
        match z.decompress_vec(input, &mut out, FlushDecompress::None) {
            Err(_) => return Ok(None),
            Ok(Status::StreamEnd) => return Ok(Some(out)),
            Ok(_) if (z.total_in(), z.total_out()) == before && out.len() < out.capacity() => {
                return Ok(Some(out));
            }
            Ok(_) => {}
        }
    }
}

/// `bytes.fromhex("".join(text.split("\n")[3:]))`
fn raw_profile_hex(text: &[u8]) -> Option<Vec<u8>> {
    let mut joined = Vec::with_capacity(text.len());
    for part in text.split(|&b| b == b'\n').skip(3) {
        joined.extend_from_slice(part);
    }
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(joined.len() / 2);
    let mut i = 0;
    while i < joined.len() {
        if matches!(joined[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
            i += 1;
            continue;
        }
        let hi = hex(joined[i])?;
        let lo = hex(*joined.get(i + 1)?)?;
        out.push(hi << 4 | lo);
        i += 2;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_profile_hex_parses_like_bytes_fromhex() {
        let text = b"\nexif\n      10\n45786966 0000\n4d4d";
        assert_eq!(raw_profile_hex(text).unwrap(), b"Exif\x00\x00MM");
        assert!(raw_profile_hex(b"\na\nb\nzz").is_none());
    }
}
