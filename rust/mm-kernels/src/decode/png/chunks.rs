//! The chunk walk of `PngImagePlugin`: `_open` reads the chunks up to the first IDAT (CRCs
//! checked), the image data is the run of IDAT / fdAT chunks that follows (CRCs not checked),
//! and `load_end` reads the chunks after it until IEND. Also what the header chunks set: the
//! mode from IHDR, the palette, the transparency.

use flate2::Crc;

use super::meta::Metadata;
use super::{truncated, F};
use crate::decode::bad;
use crate::error::Result;

const SIGNATURE_LEN: usize = 8;

/// The PNG layouts Pillow opens (`_MODES`), each with the 8-bit samples its mode holds after
/// Pillow's unpacker. The 16-bit layouts keep Pillow's own reduction, which is not one rule:
/// gray becomes mode "I;16" (the full value, clamped to 255 by every conversion to L / RGB /
/// RGBA), while RGB, RGBA and gray + alpha are unpacked to their high bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// "1": 1-bit gray, unpacked to 0 / 255.
    Bit,
    /// "L" from 2, 4 or 8-bit gray (2 and 4 bits scaled by 0x55 / 0x11).
    Gray(u8),
    Rgb,
    /// "P" with 1, 2, 4 or 8-bit indices.
    Indexed(u8),
    GrayAlpha,
    Rgba,
    /// "I;16" from 16-bit gray; held here as `min(v, 255)`, what `I16_RGB` / `I16_L` give.
    Gray16,
    /// "RGB" from 16-bit RGB (rawmode "RGB;16B": the high byte of each sample).
    Rgb16,
    /// "RGBA" from 16-bit gray + alpha (rawmode "LA;16B": high bytes, gray replicated).
    GrayAlpha16,
    /// "RGBA" from 16-bit RGBA (rawmode "RGBA;16B": high bytes).
    Rgba16,
}

impl Mode {
    fn from_ihdr(bit_depth: u8, color_type: u8) -> Option<Self> {
        Some(match (bit_depth, color_type) {
            (1, 0) => Self::Bit,
            (2 | 4 | 8, 0) => Self::Gray(bit_depth),
            (8, 2) => Self::Rgb,
            (1 | 2 | 4 | 8, 3) => Self::Indexed(bit_depth),
            (8, 4) => Self::GrayAlpha,
            (8, 6) => Self::Rgba,
            (16, 0) => Self::Gray16,
            (16, 2) => Self::Rgb16,
            (16, 4) => Self::GrayAlpha16,
            (16, 6) => Self::Rgba16,
            _ => return None,
        })
    }

    /// Bits per pixel of a raw row (Pillow's rawmode).
    pub(super) fn bits(self) -> u64 {
        match self {
            Self::Bit => 1,
            Self::Gray(b) | Self::Indexed(b) => u64::from(b),
            Self::Rgb => 24,
            Self::GrayAlpha | Self::Gray16 => 16,
            Self::Rgba | Self::GrayAlpha16 => 32,
            Self::Rgb16 => 48,
            Self::Rgba16 => 64,
        }
    }

    /// Whether samples are 16 bits (two bytes each, big-endian, in a raw row).
    pub(super) fn is_deep(self) -> bool {
        matches!(
            self,
            Self::Gray16 | Self::Rgb16 | Self::GrayAlpha16 | Self::Rgba16
        )
    }

    /// Bytes per unpacked pixel: one per 8-bit sample (sub-byte samples get one byte each, a
    /// 16-bit sample its 8-bit reduction).
    pub(super) fn unpacked_bytes(self) -> usize {
        match self {
            Self::Bit | Self::Gray(_) | Self::Indexed(_) | Self::Gray16 => 1,
            Self::GrayAlpha | Self::GrayAlpha16 => 2,
            Self::Rgb | Self::Rgb16 => 3,
            Self::Rgba | Self::Rgba16 => 4,
        }
    }
}

/// `info["transparency"]` as PngStream sets it from tRNS.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Trns {
    /// P: alpha per palette entry (the single-zero "simple" form is the same thing).
    Alphas(Vec<u8>),
    /// "1" / L / I;16: one gray value (16 bits as stored; Pillow's `rgbT2rgba` compares its low
    /// byte with the pixel converted to 8 bits when it builds alpha).
    Gray(u32),
    /// RGB (8 or 16-bit): one colour, compared the same way (low bytes against the 8-bit pixel).
    Rgb([u32; 3]),
}

/// Everything PngStream learns from the chunks.
#[derive(Default)]
pub(super) struct Info<'a> {
    size: (u32, u32),
    mode: Option<Mode>,
    /// IHDR's (bit depth, colour type), kept to name a layout Pillow has no mode for.
    ihdr: Option<(u8, u8)>,
    pub(super) interlaced: bool,
    pub(super) palette: Option<&'a [u8]>,
    pub(super) trns: Option<Trns>,
    pub(super) meta: Metadata,
    n_frames: Option<u32>,
    seq: Option<u32>,
    bbox: Option<[u32; 4]>,
}

/// One chunk as laid out in the file; `data` may be short when the file is cut.
struct Chunk<'a> {
    kind: [u8; 4],
    len: usize,
    data: &'a [u8],
    /// Offset just past the declared data (where the CRC starts).
    end: usize,
}

fn read_chunk_header(data: &[u8], pos: usize) -> Result<Chunk<'_>> {
    let head = data
        .get(pos..pos + 8)
        .ok_or_else(|| truncated("chunk header"))?;
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let kind = [head[4], head[5], head[6], head[7]];
    // Pillow's `is_cid`: four word characters.
    if !kind.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
        return Err(bad(
            F,
            format!(
                "broken PNG file (chunk {:?})",
                String::from_utf8_lossy(&kind)
            ),
        ));
    }
    let start = pos + 8;
    let end = start.saturating_add(len);
    let avail = &data[start.min(data.len())..end.min(data.len())];
    Ok(Chunk {
        kind,
        len,
        data: avail,
        end,
    })
}

impl<'a> Info<'a> {
    /// Pillow's chunk handlers (a chunk without one is only checked to be complete).
    fn handle(&mut self, c: &Chunk<'a>) -> Result<()> {
        let full = || -> Result<&'a [u8]> {
            if c.data.len() < c.len {
                Err(truncated("chunk data"))
            } else {
                Ok(c.data)
            }
        };
        let need = |n: usize, what: &str| -> Result<()> {
            if c.len < n {
                Err(bad(F, format!("truncated {what} chunk")))
            } else {
                Ok(())
            }
        };
        match &c.kind {
            b"IHDR" => {
                let s = full()?;
                need(13, "IHDR")?;
                self.size = (
                    u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
                    u32::from_be_bytes([s[4], s[5], s[6], s[7]]),
                );
                self.ihdr = Some((s[8], s[9]));
                if let Some(mode) = Mode::from_ihdr(s[8], s[9]) {
                    self.mode = Some(mode);
                }
                if s[12] != 0 {
                    self.interlaced = true;
                }
                if s[11] != 0 {
                    return Err(bad(F, "unknown filter category"));
                }
            }
            b"PLTE" => {
                let s = full()?;
                if matches!(self.mode, Some(Mode::Indexed(_))) {
                    self.palette = Some(s);
                }
            }
            b"tRNS" => self.handle_trns(full()?)?,
            b"gAMA" => {
                full()?;
                need(4, "gAMA")?;
            }
            b"cHRM" => {
                full()?;
                need(32, "cHRM")?;
            }
            b"sRGB" => {
                full()?;
                need(1, "sRGB")?;
            }
            b"pHYs" => {
                full()?;
                need(9, "pHYs")?;
            }
            b"iCCP" => {
                let s = full()?;
                let nul = s.iter().position(|&b| b == 0).unwrap_or(s.len());
                match s.get(nul + 1) {
                    Some(0) => {}
                    Some(m) => {
                        return Err(bad(F, format!("unknown compression method {m} in iCCP")))
                    }
                    None => return Err(bad(F, "truncated iCCP chunk")),
                }
            }
            b"tEXt" => self.handle_text(full()?),
            b"zTXt" => self.handle_ztxt(full()?)?,
            b"iTXt" => self.handle_itxt(full()?),
            b"eXIf" => {
                let s = full()?;
                let mut exif = b"Exif\x00\x00".to_vec();
                exif.extend_from_slice(s);
                self.meta.exif = Some(exif);
            }
            b"acTL" => {
                let s = full()?;
                need(8, "acTL")?;
                if self.n_frames.is_some() {
                    self.n_frames = None;
                } else {
                    let n = u32::from_be_bytes([s[0], s[1], s[2], s[3]]);
                    if n != 0 && n <= 0x8000_0000 {
                        self.n_frames = Some(n);
                    }
                }
            }
            b"fcTL" => {
                let s = full()?;
                need(26, "fcTL")?;
                let be = |i: usize| u32::from_be_bytes([s[i], s[i + 1], s[i + 2], s[i + 3]]);
                let seq = be(0);
                let expected = self.seq.map_or(0, |q| q.wrapping_add(1));
                if seq != expected {
                    return Err(bad(F, "APNG contains frame sequence errors"));
                }
                self.seq = Some(seq);
                let (w, h, px, py) = (be(4), be(8), be(12), be(16));
                if u64::from(px) + u64::from(w) > u64::from(self.size.0)
                    || u64::from(py) + u64::from(h) > u64::from(self.size.1)
                {
                    return Err(bad(F, "APNG contains invalid frames"));
                }
                self.bbox = Some([px, py, px + w, py + h]);
            }
            _ => {
                full()?;
            }
        }
        Ok(())
    }

    fn handle_trns(&mut self, s: &[u8]) -> Result<()> {
        let i16 = |i: usize| u32::from(u16::from_be_bytes([s[i], s[i + 1]]));
        match self.mode {
            Some(Mode::Indexed(_)) => {
                // `_simple_palette` (one 0, the rest 255) is stored as an index; the alpha
                // table it implies is the same.
                let alphas = if is_simple_palette(s) {
                    let i = s.iter().position(|&a| a == 0).unwrap_or(0);
                    let mut a = vec![255u8; i + 1];
                    a[i] = 0;
                    a
                } else {
                    s.to_vec()
                };
                self.trns = Some(Trns::Alphas(alphas));
            }
            Some(Mode::Bit | Mode::Gray(_) | Mode::Gray16) => {
                if s.len() < 2 {
                    return Err(bad(F, "truncated tRNS chunk"));
                }
                self.trns = Some(Trns::Gray(if self.mode == Some(Mode::Bit) {
                    if i16(0) != 0 {
                        255
                    } else {
                        0
                    }
                } else {
                    i16(0)
                }));
            }
            Some(Mode::Rgb | Mode::Rgb16) => {
                if s.len() < 6 {
                    return Err(bad(F, "truncated tRNS chunk"));
                }
                self.trns = Some(Trns::Rgb([i16(0), i16(2), i16(4)]));
            }
            _ => {}
        }
        Ok(())
    }
}

/// `^\xff*\x00\xff*$`
fn is_simple_palette(s: &[u8]) -> bool {
    s.iter().filter(|&&a| a == 0).count() == 1 && s.iter().all(|&a| a == 0 || a == 255)
}

/// The state after Pillow's `_open`: header info and where the image data starts.
pub(super) struct Opened<'a> {
    pub(super) info: Info<'a>,
    pub(super) mode: Mode,
    pub(super) width: u32,
    pub(super) height: u32,
    /// Offset of the first IDAT chunk's header.
    pub(super) idat: usize,
}

pub(super) fn open(data: &[u8]) -> Result<Opened<'_>> {
    let mut info = Info::default();
    let mut pos = SIGNATURE_LEN;
    let idat = loop {
        let c = read_chunk_header(data, pos)?;
        match &c.kind {
            b"IDAT" => break pos,
            b"IEND" => return Err(bad(F, "no image data (IDAT) before IEND")),
            b"fdAT" => return Err(bad(F, "APNG frame data before any IDAT is not supported")),
            _ => {}
        }
        info.handle(&c)?;
        let crc = data
            .get(c.end..c.end + 4)
            .ok_or_else(|| truncated("chunk checksum"))?;
        let mut hasher = Crc::new();
        hasher.update(&c.kind);
        hasher.update(c.data);
        if hasher.sum() != u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]) {
            let kind = String::from_utf8_lossy(&c.kind).into_owned();
            return Err(bad(
                F,
                format!("broken PNG file (bad checksum in {kind} chunk)"),
            ));
        }
        pos = c.end + 4;
    };
    let mode = match (info.mode, info.ihdr) {
        (Some(mode), _) => mode,
        // Pillow cannot identify such a file either: no mode of its own to convert from.
        (None, Some((depth, colour))) => {
            return Err(bad(
                F,
                format!(
                    "no valid IHDR (bit depth {depth} with colour type {colour} is no PNG \
                     layout Pillow has a mode for)"
                ),
            ))
        }
        (None, None) => {
            return Err(bad(
                F,
                "no valid IHDR (no IHDR chunk before the image data)",
            ))
        }
    };
    if let (Mode::Indexed(_), Some(plte)) = (mode, info.palette) {
        if plte.len() / 3 > 256 {
            // Pillow's `putpalette` refuses more than 256 entries.
            return Err(bad(
                F,
                format!("invalid palette size ({} bytes)", plte.len()),
            ));
        }
    }
    let (width, height) = info.size;
    if let Some([x0, y0, x1, y1]) = info.bbox {
        if [x0, y0, x1, y1] != [0, 0, width, height] {
            return Err(bad(
                F,
                "APNG default image smaller than the canvas is not supported",
            ));
        }
    }
    Ok(Opened {
        info,
        mode,
        width,
        height,
        idat,
    })
}

/// Offsets of the data of the consecutive IDAT (and fdAT) chunks from `first`, as Pillow's
/// `load_read` feeds them: any other chunk ends the image data.
pub(super) struct IdatReader<'a> {
    pub(super) data: &'a [u8],
    pub(super) next: usize,
}

impl<'a> IdatReader<'a> {
    /// The next piece of image data and the offset just past its chunk, or None at the end.
    pub(super) fn next_piece(&mut self) -> Result<Option<(&'a [u8], usize)>> {
        let c = read_chunk_header(self.data, self.next)?;
        let skip = match &c.kind {
            b"IDAT" => 0,
            b"fdAT" => 4,
            _ => return Ok(None),
        };
        self.next = c.end.saturating_add(4); // past the CRC, which Pillow does not check here
        let piece = c.data.get(skip..).unwrap_or_default();
        if c.data.len() < c.len {
            // The file ends inside this chunk: what is there is all there is.
            self.next = usize::MAX;
        }
        Ok(Some((piece, c.end)))
    }
}

/// Offset just past the chunk where the image data ends, without decoding it (for probes):
/// the end of the last consecutive IDAT chunk. A chunk header that cannot be read (cut, or
/// not a chunk type) ends the run too: the decode may never get that far (its last row can
/// end in an earlier chunk), and after the image data Pillow's `load_end` stops at such a
/// header rather than fail, so a probe that failed here would refuse an image Pillow decodes.
pub(super) fn skip_image_data(data: &[u8], idat: usize) -> usize {
    let mut reader = IdatReader { data, next: idat };
    let mut end = idat;
    while reader.next != usize::MAX {
        match reader.next_piece() {
            Ok(Some((_, chunk_end))) => end = chunk_end,
            Ok(None) | Err(_) => break,
        }
    }
    end
}

/// Pillow's `load_end`: the chunks after the image data, CRCs unchecked, until IEND, the end
/// of the file, or (animated) the next frame. Broken chunks here still fail the image.
pub(super) fn read_trailing_chunks<'a>(
    data: &'a [u8],
    chunk_end: usize,
    info: &mut Info<'a>,
) -> Result<()> {
    let mut pos = chunk_end.saturating_add(4);
    let animated = info.n_frames.is_some_and(|n| n > 1);
    while pos < data.len() {
        let Ok(c) = read_chunk_header(data, pos) else {
            break;
        };
        match &c.kind {
            b"IEND" => break,
            b"fcTL" if animated => break,
            b"IDAT" | b"fdAT" => {
                if c.data.len() < c.len {
                    return Err(truncated("chunk data"));
                }
            }
            _ => info.handle(&c)?,
        }
        pos = c.end.saturating_add(4);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_palette_regex() {
        assert!(is_simple_palette(b"\xff\xff\x00\xff"));
        assert!(is_simple_palette(b"\x00"));
        assert!(!is_simple_palette(b""));
        assert!(!is_simple_palette(b"\x00\x00"));
        assert!(!is_simple_palette(b"\xff\x80\x00"));
    }
}
