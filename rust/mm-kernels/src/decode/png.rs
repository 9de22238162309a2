//! PNG as Pillow reads it: the chunk walk of `PngImagePlugin` (modes, tRNS, metadata, CRCs
//! checked before the image data only, later chunks still read after it), and `ZipDecode.c`'s
//! row loop (stop at the last row, or at the end of the zlib stream with the rest left zero;
//! running out of image data before that is "truncated").

use flate2::{Crc, Decompress, FlushDecompress, Status};

use super::convert::{convert_row, replace_transparent, Lut, Palette, Source};
use super::{bad, exif, limits, Alpha, DecodeOptions, Decoded, Format, Header};
use crate::error::{KernelError, Result};
use crate::image::RgbImage;

const F: Format = Format::Png;
const SIGNATURE_LEN: usize = 8;
/// Pillow's `MAX_TEXT_CHUNK`: the most a compressed text chunk may inflate to.
const MAX_TEXT_CHUNK: usize = 1 << 20;

/// Pillow's image modes for the 8-bit-or-less PNG layouts (`_MODES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// "1": 1-bit gray, unpacked to 0 / 255.
    Bit,
    /// "L" from 2, 4 or 8-bit gray (2 and 4 bits scaled by 0x55 / 0x11).
    Gray(u8),
    Rgb,
    /// "P" with 1, 2, 4 or 8-bit indices.
    Indexed(u8),
    GrayAlpha,
    Rgba,
}

/// The 16-bit layouts Pillow opens (and we refuse rather than rescale).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Deep {
    Gray,
    Rgb,
    GrayAlpha,
    Rgba,
}

impl Deep {
    fn name(self) -> &'static str {
        match self {
            Self::Gray => "16-bit grayscale",
            Self::Rgb => "16-bit RGB",
            Self::GrayAlpha => "16-bit grayscale + alpha",
            Self::Rgba => "16-bit RGBA",
        }
    }
}

/// What an IHDR's (bit depth, colour type) maps to in Pillow's `_MODES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Supported(Mode),
    Deep(Deep),
}

impl Mode {
    fn from_ihdr(bit_depth: u8, color_type: u8) -> Option<Layout> {
        Some(Layout::Supported(match (bit_depth, color_type) {
            (1, 0) => Self::Bit,
            (2 | 4 | 8, 0) => Self::Gray(bit_depth),
            (8, 2) => Self::Rgb,
            (1 | 2 | 4 | 8, 3) => Self::Indexed(bit_depth),
            (8, 4) => Self::GrayAlpha,
            (8, 6) => Self::Rgba,
            (16, 0) => return Some(Layout::Deep(Deep::Gray)),
            (16, 2) => return Some(Layout::Deep(Deep::Rgb)),
            (16, 4) => return Some(Layout::Deep(Deep::GrayAlpha)),
            (16, 6) => return Some(Layout::Deep(Deep::Rgba)),
            _ => return None,
        }))
    }

    /// Bits per pixel of a raw row (Pillow's rawmode).
    fn bits(self) -> u64 {
        match self {
            Self::Bit => 1,
            Self::Gray(b) | Self::Indexed(b) => u64::from(b),
            Self::Rgb => 24,
            Self::GrayAlpha => 16,
            Self::Rgba => 32,
        }
    }

    /// Bytes per unpacked pixel (sub-byte samples get one byte each).
    fn unpacked_bytes(self) -> usize {
        match self {
            Self::Bit | Self::Gray(_) | Self::Indexed(_) => 1,
            Self::GrayAlpha => 2,
            Self::Rgb => 3,
            Self::Rgba => 4,
        }
    }
}

/// `info["transparency"]` as PngStream sets it from tRNS.
#[derive(Clone, Debug, PartialEq)]
enum Trns {
    /// P: alpha per palette entry (the single-zero "simple" form is the same thing).
    Alphas(Vec<u8>),
    /// "1" / L: one gray value (16 bits as stored; Pillow masks it to 8 when it builds alpha).
    Gray(u32),
    /// RGB: one colour.
    Rgb([u32; 3]),
}

#[derive(Default)]
struct Metadata {
    exif: Option<Vec<u8>>,
    raw_profile_exif: Option<Vec<u8>>,
    xmp_text: Option<Vec<u8>>,
    xmp_raw: Option<Vec<u8>>,
}

impl Metadata {
    fn orientation(&self) -> u8 {
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

/// Everything PngStream learns from the chunks.
#[derive(Default)]
struct Info<'a> {
    size: (u32, u32),
    mode: Option<Layout>,
    interlaced: bool,
    palette: Option<&'a [u8]>,
    trns: Option<Trns>,
    meta: Metadata,
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

fn truncated(what: &str) -> KernelError {
    bad(F, format!("truncated data ({what})"))
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
                if matches!(self.mode, Some(Layout::Supported(Mode::Indexed(_)))) {
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
            Some(Layout::Supported(Mode::Indexed(_))) => {
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
            Some(Layout::Supported(Mode::Bit | Mode::Gray(_)) | Layout::Deep(Deep::Gray)) => {
                if s.len() < 2 {
                    return Err(bad(F, "truncated tRNS chunk"));
                }
                self.trns = Some(Trns::Gray(
                    if self.mode == Some(Layout::Supported(Mode::Bit)) {
                        if i16(0) != 0 {
                            255
                        } else {
                            0
                        }
                    } else {
                        i16(0)
                    },
                ));
            }
            Some(Layout::Supported(Mode::Rgb) | Layout::Deep(Deep::Rgb)) => {
                if s.len() < 6 {
                    return Err(bad(F, "truncated tRNS chunk"));
                }
                self.trns = Some(Trns::Rgb([i16(0), i16(2), i16(4)]));
            }
            _ => {}
        }
        Ok(())
    }

    fn handle_text(&mut self, s: &[u8]) {
        let (k, v) = split_nul(s).unwrap_or((s, &[]));
        self.text_value(k, v.to_vec(), true);
    }

    fn handle_ztxt(&mut self, s: &[u8]) -> Result<()> {
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

    fn handle_itxt(&mut self, s: &[u8]) {
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

/// `^\xff*\x00\xff*$`
fn is_simple_palette(s: &[u8]) -> bool {
    s.iter().filter(|&&a| a == 0).count() == 1 && s.iter().all(|&a| a == 0 || a == 255)
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

/// The state after Pillow's `_open`: header info and where the image data starts.
struct Opened<'a> {
    info: Info<'a>,
    mode: Mode,
    width: u32,
    height: u32,
    /// Offset of the first IDAT chunk's header.
    idat: usize,
}

fn open(data: &[u8]) -> Result<Opened<'_>> {
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
    let mode = match info.mode {
        None => return Err(bad(F, "no valid IHDR (unknown bit depth / colour type)")),
        Some(Layout::Deep(deep)) => {
            let name = deep.name();
            return Err(bad(
                F,
                format!("{name} samples are deeper than 8 bits (not supported)"),
            ));
        }
        Some(Layout::Supported(mode)) => mode,
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

pub(crate) fn probe(data: &[u8]) -> Result<Header> {
    let o = open(data)?;
    limits::non_empty(F, o.width.into(), o.height.into())?;
    // The orientation may sit in chunks after the image data: walk them (no pixel decode).
    let mut info = o.info;
    let after = skip_image_data(data, o.idat)?;
    read_trailing_chunks(data, after, &mut info)?;
    Ok(Header {
        width: o.width,
        height: o.height,
        orientation: info.meta.orientation(),
    })
}

pub(crate) fn decode(data: &[u8], opts: &DecodeOptions) -> Result<Decoded> {
    let o = open(data)?;
    let (w, h) = (u64::from(o.width), u64::from(o.height));
    limits::check(F, w, h, opts)?;
    let geometry = Geometry::new(o.mode, o.width as usize, o.height as usize)?;
    check_compressed_size(data, o.idat, &geometry)?;
    let mut info = o.info;
    // The palette is fixed when the file is opened; tRNS is read again after the image data.
    let palette = info.palette;
    let trns_at_open = info.trns.clone();
    let job = Render {
        data,
        idat: o.idat,
        mode: o.mode,
        g: &geometry,
        interlaced: info.interlaced,
    };
    let (mut out, end) = job.run(palette, info.trns.as_ref(), opts.alpha)?;
    // Pillow reads the chunks after the image data before it converts (and fails on broken
    // ones); a tRNS found there still applies, so render again in that rare case.
    read_trailing_chunks(data, end, &mut info)?;
    if info.trns != trns_at_open {
        drop(std::mem::take(&mut out)); // keep the peak at one image
        out = job.run(palette, info.trns.as_ref(), opts.alpha)?.0;
    }
    if opts.alpha == Alpha::White && o.mode == Mode::Rgb {
        if let Some(Trns::Rgb([r, g, b])) = info.trns {
            replace_transparent(
                &mut out,
                [(r & 0xff) as u8, (g & 0xff) as u8, (b & 0xff) as u8],
            );
        }
    }
    let orientation = if opts.exif_orientation {
        info.meta.orientation()
    } else {
        1
    };
    let image = RgbImage {
        width: geometry.width,
        height: geometry.height,
        data: out,
    };
    Ok(Decoded { image, orientation })
}

/// Deflate's highest expansion: one 258-byte match per ~2 bits of a dynamic block.
const MAX_DEFLATE_RATIO: u64 = 1032;

/// Refuse, before the output buffer is allocated, image data too short to inflate to the
/// declared size even at deflate's highest ratio: a 69-byte file declaring 13000x13000 is
/// "truncated" at once instead of after allocating half a gigabyte.
fn check_compressed_size(data: &[u8], idat: usize, g: &Geometry) -> Result<()> {
    let mut reader = IdatReader { data, next: idat };
    let mut compressed: u64 = 0;
    // A chunk that cannot be read ends the data here; the decode reports it as before.
    while let Ok(Some((piece, _))) = reader.next_piece() {
        compressed = compressed.saturating_add(piece.len() as u64);
        if reader.next == usize::MAX {
            break;
        }
    }
    // A lower bound of the raw size, interlaced or not: the pixels' bits, no filter bytes.
    let raw = (g.pixels() as u64).saturating_mul(g.bits) / 8;
    if compressed
        .saturating_mul(MAX_DEFLATE_RATIO)
        .saturating_add(1024)
        < raw
    {
        return Err(bad(
            F,
            format!(
                "image data truncated: {compressed} compressed bytes cannot hold the {raw} bytes \
                 of a {}x{} image (deflate expands at most {MAX_DEFLATE_RATIO}:1)",
                g.width, g.height
            ),
        ));
    }
    Ok(())
}

/// One decode of the image data into RGB with a given palette and transparency.
struct Render<'a, 'g> {
    data: &'a [u8],
    idat: usize,
    mode: Mode,
    g: &'g Geometry,
    interlaced: bool,
}

impl Render<'_, '_> {
    /// The RGB pixels (RGB-mode transparency still to apply) and where the image data ended.
    fn run(
        &self,
        palette: Option<&[u8]>,
        trns: Option<&Trns>,
        alpha: Alpha,
    ) -> Result<(Vec<u8>, usize)> {
        let (mode, g) = (self.mode, self.g);
        let mut out = limits::alloc(limits::buffer_len(F, g.width as u64, g.height as u64, 3)?)?;
        // Fold palette, transparency and alpha mode into one row converter.
        let lut = match mode {
            Mode::Indexed(_) => {
                let mut pal = Palette::new();
                if let Some(plte) = palette {
                    pal.set_colours(&plte[..plte.len().min(768)], 3, [0, 1, 2]);
                }
                if let Some(Trns::Alphas(alphas)) = trns {
                    for (entry, &a) in pal.rgba.iter_mut().zip(alphas) {
                        entry[3] = a;
                    }
                }
                Some(pal.lut(alpha, trns.is_some()))
            }
            Mode::Bit | Mode::Gray(_) => match trns {
                Some(Trns::Gray(t)) => Some(Lut::gray(alpha, Some(*t))),
                _ => Some(Lut::gray(alpha, None)),
            },
            _ => None,
        };
        let source = match (mode, &lut) {
            (_, Some(lut)) => Source::Indexed(lut),
            (Mode::GrayAlpha, _) => Source::GrayAlpha,
            (Mode::Rgba, _) => Source::Rgba,
            _ => Source::Rgb { trns: None },
        };
        let row_out = g.width * 3;
        let row_in = g.width * mode.unpacked_bytes();
        let end = if self.interlaced {
            let mut unpacked = limits::alloc(g.pixels() * mode.unpacked_bytes())?;
            let end = inflate_rows(self.data, self.idat, g, true, |pass, y, raw| {
                g.scatter(mode, pass, y, raw, &mut unpacked);
            })?;
            for (src, dst) in unpacked
                .chunks_exact(row_in)
                .zip(out.chunks_exact_mut(row_out))
            {
                convert_row(&source, alpha, src, dst);
            }
            end
        } else {
            let mut unpacked = vec![0u8; row_in];
            let identity = source.is_identity(alpha);
            let mut done = 0usize;
            let end = inflate_rows(self.data, self.idat, g, false, |_, y, raw| {
                let dst = &mut out[y * row_out..(y + 1) * row_out];
                if identity {
                    dst.copy_from_slice(&raw[..row_out]);
                } else {
                    unpack(mode, raw, g.width, &mut unpacked);
                    convert_row(&source, alpha, &unpacked, dst);
                }
                done = y + 1;
            })?;
            // Rows the zlib stream never reached stay zero in Pillow's image: convert those.
            if done < g.height && !identity {
                unpacked.fill(0);
                for dst in out.chunks_exact_mut(row_out).skip(done) {
                    convert_row(&source, alpha, &unpacked, dst);
                }
            }
            end
        };
        Ok((out, end))
    }
}

/// Row sizes of the raw (filtered) image.
struct Geometry {
    width: usize,
    height: usize,
    bits: u64,
    /// Bytes of one full raw row (without the filter byte).
    row_bytes: usize,
    /// Filter distance in bytes.
    bpp: usize,
}

const STARTING_ROW: [usize; 7] = [0, 0, 4, 0, 2, 0, 1];
const STARTING_COL: [usize; 7] = [0, 4, 0, 2, 0, 1, 0];
const ROW_INCREMENT: [usize; 7] = [8, 8, 8, 4, 4, 2, 2];
const COL_INCREMENT: [usize; 7] = [8, 8, 4, 4, 2, 2, 1];

impl Geometry {
    fn new(mode: Mode, width: usize, height: usize) -> Result<Self> {
        let bits = mode.bits();
        let row_bits = (width as u64)
            .checked_mul(bits)
            .ok_or_else(|| bad(F, "row too long"))?;
        let row_bytes =
            usize::try_from(row_bits.div_ceil(8)).map_err(|_| bad(F, "row too long"))?;
        Ok(Self {
            width,
            height,
            bits,
            row_bytes,
            bpp: bits.div_ceil(8) as usize,
        })
    }

    fn pixels(&self) -> usize {
        self.width * self.height
    }

    /// Columns in Adam7 pass `p`, and its raw row length in bytes.
    fn pass_row(&self, p: usize) -> (usize, usize) {
        let cols = (self.width + (COL_INCREMENT[p] - 1 - STARTING_COL[p])) / COL_INCREMENT[p];
        (cols, (cols as u64 * self.bits).div_ceil(8) as usize)
    }

    /// Place the pixels of one interlaced row into the unpacked full image.
    fn scatter(&self, mode: Mode, pass: usize, y: usize, raw: &[u8], unpacked: &mut [u8]) {
        let (cols, _) = self.pass_row(pass);
        let n = mode.unpacked_bytes();
        let row = &mut unpacked[y * self.width * n..(y + 1) * self.width * n];
        let mut x = STARTING_COL[pass];
        for i in 0..cols {
            let px = &mut row[x * n..x * n + n];
            if self.bits >= 8 {
                px.copy_from_slice(&raw[i * n..i * n + n]);
            } else {
                px[0] = sample(mode, raw, i);
            }
            x += COL_INCREMENT[pass];
        }
    }
}

/// The `i`-th sub-byte sample of a packed row, unpacked as Pillow's rawmode does.
#[inline]
fn sample(mode: Mode, raw: &[u8], i: usize) -> u8 {
    let bits = mode.bits() as usize;
    let bit = i * bits;
    let v = (raw[bit / 8] << (bit % 8)) >> (8 - bits);
    match mode {
        Mode::Bit => {
            if v != 0 {
                255
            } else {
                0
            }
        }
        Mode::Gray(2) => v * 0x55,
        Mode::Gray(4) => v * 0x11,
        _ => v,
    }
}

/// Unpack a full raw row into one value per pixel (sub-byte modes) or copy it.
fn unpack(mode: Mode, raw: &[u8], width: usize, out: &mut [u8]) {
    if mode.bits() >= 8 {
        out.copy_from_slice(&raw[..out.len()]);
    } else {
        for (i, o) in out[..width].iter_mut().enumerate() {
            *o = sample(mode, raw, i);
        }
    }
}

/// Offsets of the data of the consecutive IDAT (and fdAT) chunks from `first`, as Pillow's
/// `load_read` feeds them: any other chunk ends the image data.
struct IdatReader<'a> {
    data: &'a [u8],
    next: usize,
}

impl<'a> IdatReader<'a> {
    /// The next piece of image data and the offset just past its chunk, or None at the end.
    fn next_piece(&mut self) -> Result<Option<(&'a [u8], usize)>> {
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

/// Inflate the image data row by row (Pillow's ZipDecode), unfilter each row and hand it to
/// `emit(pass, y, row)` (pass is 0 when not interlaced). Returns the offset just past the
/// chunk where the image ended, from where Pillow reads the trailing chunks.
fn inflate_rows(
    data: &[u8],
    idat: usize,
    g: &Geometry,
    interlaced: bool,
    mut emit: impl FnMut(usize, usize, &[u8]),
) -> Result<usize> {
    let mut z = Decompress::new(true);
    let mut reader = IdatReader { data, next: idat };
    let mut cur = vec![0u8; g.row_bytes + 1];
    let mut prev = vec![0u8; g.row_bytes + 1];
    let mut filled = 0usize;
    let mut pass = 0usize;
    let mut y = 0usize;
    let mut row_len = if interlaced {
        g.pass_row(0).1
    } else {
        g.row_bytes
    };
    loop {
        if reader.next == usize::MAX {
            return Err(truncated("image file is truncated"));
        }
        let Some((piece, chunk_end)) = reader.next_piece()? else {
            return Err(truncated("image data ends before the last row"));
        };
        let mut consumed = 0usize;
        while consumed < piece.len() {
            let in_before = z.total_in();
            let out_before = z.total_out();
            let status = z
                .decompress(
                    &piece[consumed..],
                    &mut cur[filled..=row_len],
                    FlushDecompress::None,
                )
                .map_err(|e| bad(F, format!("broken data stream ({e})")))?;
            consumed += (z.total_in() - in_before) as usize;
            filled += (z.total_out() - out_before) as usize;
            let stream_end = status == Status::StreamEnd;
            if filled < row_len + 1 {
                if stream_end || (z.total_in() == in_before && z.total_out() == out_before) {
                    // The zlib stream ended inside a row: Pillow waits for more data that
                    // never comes.
                    break;
                }
                continue;
            }
            unfilter(cur[0], &mut cur[1..=row_len], &prev[1..=row_len], g.bpp)?;
            emit(pass, y, &cur[1..=row_len]);
            filled = 0;
            if interlaced {
                y += ROW_INCREMENT[pass];
                while y >= g.height || row_len == 0 {
                    pass += 1;
                    if pass == 7 {
                        return Ok(chunk_end);
                    }
                    y = STARTING_ROW[pass];
                    row_len = g.pass_row(pass).1;
                    cur.fill(0);
                }
            } else {
                y += 1;
                if y >= g.height {
                    return Ok(chunk_end);
                }
            }
            if stream_end {
                return Ok(chunk_end);
            }
            std::mem::swap(&mut cur, &mut prev);
        }
    }
}

/// Undo a PNG row filter in place, exactly as ZipDecode.c does.
fn unfilter(kind: u8, row: &mut [u8], prev: &[u8], bpp: usize) -> Result<()> {
    let n = row.len();
    match kind {
        0 => {}
        1 => {
            for i in bpp..n {
                row[i] = row[i].wrapping_add(row[i - bpp]);
            }
        }
        2 => {
            for (r, &p) in row.iter_mut().zip(prev) {
                *r = r.wrapping_add(p);
            }
        }
        3 => {
            for i in 0..bpp.min(n) {
                row[i] = row[i].wrapping_add(prev[i] / 2);
            }
            for i in bpp..n {
                let avg = (u16::from(row[i - bpp]) + u16::from(prev[i])) / 2;
                row[i] = row[i].wrapping_add(avg as u8);
            }
        }
        4 => match bpp {
            3 => paeth::<3>(row, prev),
            4 => paeth::<4>(row, prev),
            2 => paeth::<2>(row, prev),
            _ => paeth::<1>(row, prev),
        },
        other => return Err(bad(F, format!("unknown filter type {other}"))),
    }
    Ok(())
}

fn paeth<const BPP: usize>(row: &mut [u8], prev: &[u8]) {
    let n = row.len();
    for i in 0..BPP.min(n) {
        row[i] = row[i].wrapping_add(prev[i]);
    }
    let mut i = BPP;
    while i + BPP <= n {
        for k in 0..BPP {
            let a = i16::from(row[i + k - BPP]);
            let b = i16::from(prev[i + k]);
            let c = i16::from(prev[i + k - BPP]);
            let pa = (b - c).abs();
            let pb = (a - c).abs();
            let pc = (a + b - 2 * c).abs();
            let pred = if pa <= pb && pa <= pc {
                a
            } else if pb <= pc {
                b
            } else {
                c
            };
            row[i + k] = row[i + k].wrapping_add(pred as u8);
        }
        i += BPP;
    }
}

/// Offset just past the chunk where the image data ends, without decoding it (for probes):
/// the end of the last consecutive IDAT chunk.
fn skip_image_data(data: &[u8], idat: usize) -> Result<usize> {
    let mut reader = IdatReader { data, next: idat };
    let mut end = idat;
    while reader.next != usize::MAX {
        match reader.next_piece()? {
            Some((_, chunk_end)) => end = chunk_end,
            None => break,
        }
    }
    Ok(end)
}

/// Pillow's `load_end`: the chunks after the image data, CRCs unchecked, until IEND, the end
/// of the file, or (animated) the next frame. Broken chunks here still fail the image.
fn read_trailing_chunks<'a>(data: &'a [u8], chunk_end: usize, info: &mut Info<'a>) -> Result<()> {
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
    fn paeth_matches_the_reference_predictor() {
        let prev = [10u8, 200, 30, 40, 250, 60];
        let mut row = [1u8, 2, 3, 4, 5, 6];
        let mut expect = row;
        for i in 0..6 {
            let a = if i >= 3 { i16::from(expect[i - 3]) } else { 0 };
            let b = i16::from(prev[i]);
            let c = if i >= 3 { i16::from(prev[i - 3]) } else { 0 };
            let p = a + b - c;
            let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
            let pred = if pa <= pb && pa <= pc {
                a
            } else if pb <= pc {
                b
            } else {
                c
            };
            expect[i] = expect[i].wrapping_add(pred as u8);
        }
        unfilter(4, &mut row, &prev, 3).unwrap();
        assert_eq!(row, expect);
    }

    #[test]
    fn raw_profile_hex_parses_like_bytes_fromhex() {
        let text = b"\nexif\n      10\n45786966 0000\n4d4d";
        assert_eq!(raw_profile_hex(text).unwrap(), b"Exif\x00\x00MM");
        assert!(raw_profile_hex(b"\na\nb\nzz").is_none());
    }

    #[test]
    fn simple_palette_regex() {
        assert!(is_simple_palette(b"\xff\xff\x00\xff"));
        assert!(is_simple_palette(b"\x00"));
        assert!(!is_simple_palette(b""));
        assert!(!is_simple_palette(b"\x00\x00"));
        assert!(!is_simple_palette(b"\xff\x80\x00"));
    }
}
