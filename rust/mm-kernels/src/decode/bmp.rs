//! BMP as Pillow's `BmpImagePlugin` reads it: the header variants it accepts, its bit-field
//! layouts, gray palettes read as "1" / L (with the raw mode that implies), RLE8 / RLE4 as its
//! Python decoder expands them, and raw rows as `RawDecode.c` walks them.
//!
//! Why a reader of our own: BMP has many header variants and no single reference decoder, and
//! the contract is Pillow's, bit for bit, on good and bad files alike. Pillow decodes a file
//! whose last row lacks its padding, reads an all-zero 32-bit mask set as BGRA and a 5-5-5
//! layout given as masks in an INFO header, and refuses a 4-bit gray palette (it has no raw
//! mode for one); each of those is a rule here, checked against Pillow by the Python parity
//! suites, so malformed input fails as it fails there and what Pillow decodes comes out the
//! same.

use super::convert::{compact4_in_place, convert_row, rgba_to_rgb, Lut, Palette, Source};
use super::{bad, limits, DecodeOptions, Decoded, Format, Header};
use crate::error::{KernelError, Result};
use crate::image::RgbImage;

const F: Format = Format::Bmp;

/// Pillow's raw modes for BMP pixel rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Raw {
    /// Palette indices of 1, 4 or 8 bits ("P;1", "P;4", "P").
    Indices(u8),
    /// "1": one bit per pixel, 0 or 255.
    Bit,
    /// "L": one byte per pixel.
    Gray,
    /// "BGR;15" / "BGR;16" (5-6-5).
    Bgr15,
    Bgr16,
    /// "BGR"
    Bgr24,
    /// 32 bits; byte index of R, G, B and (Some) A.
    Bytes32([usize; 3], Option<usize>),
}

impl Raw {
    fn bits(self) -> u64 {
        match self {
            Self::Indices(b) => u64::from(b),
            Self::Bit => 1,
            Self::Gray => 8,
            Self::Bgr15 | Self::Bgr16 => 16,
            Self::Bgr24 => 24,
            Self::Bytes32(..) => 32,
        }
    }

    fn has_alpha(self) -> bool {
        matches!(self, Self::Bytes32(_, Some(_)))
    }
}

/// Pillow's image mode of the BMP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Palette,
    Bit,
    Gray,
    Rgb,
    Rgba,
}

struct Bmp<'a> {
    width: u32,
    height: u32,
    /// true: rows stored top-down.
    top_down: bool,
    raw: Raw,
    mode: Mode,
    /// File bits per pixel (for the row stride).
    bits: u16,
    rle: Option<bool>, // Some(is_rle4)
    palette: &'a [u8],
    palette_stride: usize,
    /// Offset of the pixel data.
    offset: usize,
}

fn truncated(what: &str) -> KernelError {
    bad(F, format!("truncated data ({what})"))
}

fn le32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn le16(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn parse(data: &[u8]) -> Result<Bmp<'_>> {
    let head = data.get(..14).ok_or_else(|| truncated("file header"))?;
    let mut offset = le32(head, 10) as usize;
    let header_size = le32(data.get(14..18).ok_or_else(|| truncated("info header"))?, 0) as usize;
    let hd_start = 18;
    let hd_len = header_size.saturating_sub(4);
    let hd = data
        .get(hd_start..hd_start + hd_len)
        .ok_or_else(|| truncated("info header"))?;
    let mut pos = hd_start + hd_len;

    let (width, height, top_down, bits, compression, colors, palette_stride, masks);
    match header_size {
        12 => {
            width = u32::from(le16(hd, 0));
            height = u32::from(le16(hd, 2));
            top_down = false;
            bits = le16(hd, 6);
            compression = 0;
            colors = 0;
            palette_stride = 3;
            masks = None;
        }
        40 | 52 | 56 | 64 | 108 | 124 => {
            let y_flip = hd[7] == 0xFF;
            width = le32(hd, 0);
            height = if y_flip {
                le32(hd, 4).wrapping_neg()
            } else {
                le32(hd, 4)
            };
            top_down = y_flip;
            bits = le16(hd, 10);
            compression = le32(hd, 12);
            colors = le32(hd, 28);
            palette_stride = 4;
            masks = if compression == 3 {
                if hd.len() >= 48 {
                    let a = if hd.len() >= 52 { le32(hd, 48) } else { 0 };
                    Some([le32(hd, 36), le32(hd, 40), le32(hd, 44), a])
                } else {
                    let m = data
                        .get(pos..pos + 12)
                        .ok_or_else(|| truncated("bit masks"))?;
                    pos += 12;
                    Some([le32(m, 0), le32(m, 4), le32(m, 8), 0])
                }
            } else {
                None
            };
        }
        other => return Err(bad(F, format!("unsupported BMP header type ({other})"))),
    }
    let colors = if colors == 0 {
        1u64 << bits.min(63)
    } else {
        u64::from(colors)
    };
    if offset == 14 + header_size && bits <= 8 {
        offset += palette_stride * colors as usize;
    }
    let (mut mode, mut raw) = match bits {
        1 => (Mode::Palette, Raw::Indices(1)),
        4 => (Mode::Palette, Raw::Indices(4)),
        8 => (Mode::Palette, Raw::Indices(8)),
        16 => (Mode::Rgb, Raw::Bgr15),
        24 => (Mode::Rgb, Raw::Bgr24),
        32 => (Mode::Rgb, Raw::Bytes32([2, 1, 0], None)),
        other => return Err(bad(F, format!("unsupported BMP pixel depth ({other})"))),
    };
    let mut rle = None;
    match (compression, masks) {
        (3, Some([r, g, b, a])) => {
            raw = bitfields(bits, [r, g, b, a])
                .ok_or_else(|| bad(F, "unsupported BMP bitfields layout"))?;
            if raw.has_alpha() {
                mode = Mode::Rgba;
            }
        }
        (0, _) => {}
        (1 | 2, _) => rle = Some(compression == 2),
        (other, _) => return Err(bad(F, format!("unsupported BMP compression ({other})"))),
    }

    let mut palette: &[u8] = &[];
    if mode == Mode::Palette {
        if !(1..=65536).contains(&colors) {
            return Err(bad(F, format!("unsupported BMP palette size ({colors})")));
        }
        let n = palette_stride * colors as usize;
        palette = &data[pos.min(data.len())..(pos + n).min(data.len())];
        let gray_levels: Vec<u8> = if colors == 2 {
            vec![0, 255]
        } else {
            (0..colors).map(|i| i as u8).collect()
        };
        // Pillow compares the first `colors` entries with (v, v, v) for the ramp above.
        let grayscale = gray_levels.iter().enumerate().all(|(i, &v)| {
            palette.get(i * palette_stride..i * palette_stride + 3) == Some(&[v, v, v][..])
        });
        if grayscale {
            mode = if colors <= 2 { Mode::Bit } else { Mode::Gray };
            raw = if mode == Mode::Bit {
                Raw::Bit
            } else {
                Raw::Gray
            };
        } else if palette.len() / palette_stride > 256 {
            // Pillow's `putpalette` refuses more than 256 entries.
            return Err(bad(F, format!("invalid palette size ({colors} colours)")));
        }
    }
    Ok(Bmp {
        width,
        height,
        top_down,
        raw,
        mode,
        bits,
        rle,
        palette,
        palette_stride,
        offset,
    })
}

/// Pillow's supported BITFIELDS layouts.
fn bitfields(bits: u16, [r, g, b, a]: [u32; 4]) -> Option<Raw> {
    let byte = |m: u32| match m {
        0xFF => Some(0),
        0xFF00 => Some(1),
        0xFF_0000 => Some(2),
        0xFF00_0000 => Some(3),
        _ => None,
    };
    match bits {
        32 => {
            const LAYOUTS: [[u32; 4]; 8] = [
                [0xFF0000, 0xFF00, 0xFF, 0],
                [0xFF000000, 0xFF0000, 0xFF00, 0],
                [0xFF000000, 0xFF00, 0xFF, 0],
                [0xFF000000, 0xFF0000, 0xFF00, 0xFF],
                [0xFF, 0xFF00, 0xFF0000, 0xFF000000],
                [0xFF0000, 0xFF00, 0xFF, 0xFF000000],
                [0xFF000000, 0xFF00, 0xFF, 0xFF0000],
                [0, 0, 0, 0],
            ];
            if !LAYOUTS.contains(&[r, g, b, a]) {
                return None;
            }
            if [r, g, b, a] == [0, 0, 0, 0] {
                return Some(Raw::Bytes32([2, 1, 0], Some(3))); // "BGRA"
            }
            Some(Raw::Bytes32(
                [byte(r)?, byte(g)?, byte(b)?],
                if a == 0 { None } else { byte(a) },
            ))
        }
        24 if [r, g, b] == [0xFF0000, 0xFF00, 0xFF] => Some(Raw::Bgr24),
        16 if [r, g, b] == [0xF800, 0x7E0, 0x1F] => Some(Raw::Bgr16),
        16 if [r, g, b] == [0x7C00, 0x3E0, 0x1F] => Some(Raw::Bgr15),
        _ => None,
    }
}

pub(crate) fn probe(data: &[u8]) -> Result<Header> {
    let b = parse(data)?;
    Header::unrotated(F, b.width, b.height)
}

/// Pillow's mode of the BMP (gray palettes read as "1" / "L", alpha bitfields as "RGBA");
/// a BMP has no transparency entry.
pub(crate) fn source_mode(data: &[u8]) -> Result<super::SourceMode> {
    let mode = match parse(data)?.mode {
        Mode::Palette => "P",
        Mode::Bit => "1",
        Mode::Gray => "L",
        Mode::Rgb => "RGB",
        Mode::Rgba => "RGBA",
    };
    Ok(super::SourceMode::new(mode, false))
}

pub(crate) fn decode(data: &[u8], opts: &DecodeOptions) -> Result<Decoded> {
    let b = parse(data)?;
    let (w, h) = (u64::from(b.width), u64::from(b.height));
    limits::check(F, w, h, opts)?;
    let (width, height) = (b.width as usize, b.height as usize);

    // Single-band modes go through a table: palette colours, "1" as 0/255, L as is.
    let lut = match b.mode {
        Mode::Palette => {
            let mut pal = Palette::new();
            let n = b.palette.len().min(256 * b.palette_stride);
            pal.set_colours(&b.palette[..n], b.palette_stride, [2, 1, 0]);
            Some(pal.lut(opts.alpha, false))
        }
        Mode::Bit | Mode::Gray => Some(Lut::gray(opts.alpha, None)),
        Mode::Rgb | Mode::Rgba => None,
    };

    if let Some(rle4) = b.rle {
        let indices = rle_expand(data, b.offset, width, height, rle4)?;
        let mut lut = lut.ok_or_else(|| bad(F, "RLE compression needs a palette image"))?;
        if b.mode == Mode::Bit {
            // RLE rows are unpacked as L into a "1" image: any non-zero byte is white.
            for (i, entry) in lut.0.iter_mut().enumerate() {
                *entry = if i == 0 { [0; 3] } else { [255; 3] };
            }
        }
        let mut out = limits::alloc(limits::buffer_len(F, w, h, 3)?)?;
        for (r, src) in indices.chunks_exact(width).enumerate() {
            let y = if b.top_down { r } else { height - 1 - r };
            convert_row(
                &Source::Indexed(&lut),
                opts.alpha,
                src,
                &mut out[y * width * 3..(y + 1) * width * 3],
            );
        }
        return Ok(Decoded {
            image: RgbImage {
                width,
                height,
                data: out,
            },
            orientation: 1,
        });
    }

    // Raw rows: `stride` bytes in the file, of which Pillow unpacks `bytes` per row.
    let stride = ((w * u64::from(b.bits) + 31) >> 3) & !3;
    let bytes = (w * b.raw.bits()).div_ceil(8);
    if stride < bytes {
        return Err(bad(
            F,
            "row stride smaller than the row (decoder configuration error)",
        ));
    }
    let (stride, bytes) = (stride as usize, bytes as usize);
    // The last row needs no padding after it.
    let needed = b.offset as u64 + (h - 1) * stride as u64 + bytes as u64;
    if needed > data.len() as u64 {
        return Err(truncated("image file is truncated"));
    }
    let channels = if b.mode == Mode::Rgba { 4 } else { 3 };
    let mut out = limits::alloc(limits::buffer_len(F, w, h, channels)?)?;
    let mut row_buf = vec![0u8; width];
    let row_len = width * channels as usize;
    for r in 0..height {
        let src = &data[b.offset + r * stride..b.offset + r * stride + bytes];
        let y = if b.top_down { r } else { height - 1 - r };
        let dst = &mut out[y * row_len..(y + 1) * row_len];
        match (b.raw, &lut) {
            (Raw::Indices(_) | Raw::Bit | Raw::Gray, Some(lut)) => {
                unpack_single(b.raw, src, &mut row_buf);
                convert_row(&Source::Indexed(lut), opts.alpha, &row_buf, dst);
            }
            _ => unpack_colour(b.raw, src, dst),
        }
    }
    if channels == 4 {
        compact4_in_place(&mut out, width * height, rgba_to_rgb(opts.alpha));
    }
    Ok(Decoded {
        image: RgbImage {
            width,
            height,
            data: out,
        },
        orientation: 1,
    })
}

/// One byte per pixel from a packed row.
fn unpack_single(raw: Raw, src: &[u8], out: &mut [u8]) {
    match raw {
        Raw::Indices(8) | Raw::Gray => out.copy_from_slice(&src[..out.len()]),
        Raw::Bit => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = if src[i / 8] & (0x80 >> (i % 8)) != 0 {
                    255
                } else {
                    0
                };
            }
        }
        Raw::Indices(bits) => {
            let bits = usize::from(bits);
            for (i, o) in out.iter_mut().enumerate() {
                let bit = i * bits;
                *o = (src[bit / 8] << (bit % 8)) >> (8 - bits);
            }
        }
        _ => {}
    }
}

/// RGB (or RGBA for layouts with alpha) from a colour row, per Pillow's unpackers.
fn unpack_colour(raw: Raw, src: &[u8], out: &mut [u8]) {
    match raw {
        Raw::Bgr24 => {
            for (o, p) in out.chunks_exact_mut(3).zip(src.chunks_exact(3)) {
                o.copy_from_slice(&[p[2], p[1], p[0]]);
            }
        }
        Raw::Bgr15 | Raw::Bgr16 => {
            for (o, p) in out.chunks_exact_mut(3).zip(src.chunks_exact(2)) {
                let v = u32::from(u16::from_le_bytes([p[0], p[1]]));
                let (r, g, b) = if raw == Raw::Bgr16 {
                    (
                        ((v >> 11) & 31) * 255 / 31,
                        ((v >> 5) & 63) * 255 / 63,
                        (v & 31) * 255 / 31,
                    )
                } else {
                    (
                        ((v >> 10) & 31) * 255 / 31,
                        ((v >> 5) & 31) * 255 / 31,
                        (v & 31) * 255 / 31,
                    )
                };
                o.copy_from_slice(&[r as u8, g as u8, b as u8]);
            }
        }
        Raw::Bytes32([r, g, b], alpha) => match alpha {
            Some(a) => {
                for (o, p) in out.chunks_exact_mut(4).zip(src.chunks_exact(4)) {
                    o.copy_from_slice(&[p[r], p[g], p[b], p[a]]);
                }
            }
            None => {
                for (o, p) in out.chunks_exact_mut(3).zip(src.chunks_exact(4)) {
                    o.copy_from_slice(&[p[r], p[g], p[b]]);
                }
            }
        },
        _ => {}
    }
}

/// Pillow's `BmpRleDecoder`: the expanded indices in file row order (w * h bytes), or the
/// "not enough image data" error when the runs stop short.
fn rle_expand(
    data: &[u8],
    offset: usize,
    xsize: usize,
    ysize: usize,
    rle4: bool,
) -> Result<Vec<u8>> {
    let dest = xsize * ysize;
    let mut out: Vec<u8> = Vec::with_capacity(dest);
    let mut pos = offset;
    let mut x = 0usize;
    let read = |pos: &mut usize, n: usize| -> &[u8] {
        let s = &data[(*pos).min(data.len())..(*pos + n).min(data.len())];
        *pos += n;
        s
    };
    while out.len() < dest {
        let pair = read(&mut pos, 2);
        if pair.len() < 2 {
            break;
        }
        let (count, byte) = (usize::from(pair[0]), pair[1]);
        if count > 0 {
            let n = if x + count > xsize {
                xsize.saturating_sub(x)
            } else {
                count
            };
            if rle4 {
                for k in 0..n {
                    out.push(if k % 2 == 0 { byte >> 4 } else { byte & 0x0F });
                }
            } else {
                out.resize(out.len() + n, byte);
            }
            x += n;
            continue;
        }
        match byte {
            0 => {
                while !out.len().is_multiple_of(xsize) {
                    out.push(0);
                }
                x = 0;
            }
            1 => break,
            2 => {
                let d = read(&mut pos, 2);
                if d.len() < 2 {
                    break;
                }
                let (right, up) = (usize::from(d[0]), usize::from(d[1]));
                let n = (dest - out.len()).min(right + up * xsize);
                out.resize(out.len() + n, 0);
                x = out.len() % xsize;
            }
            n => {
                let n = usize::from(n);
                let count = (dest - out.len()).min(n);
                let byte_count = if rle4 { count.div_ceil(2) } else { count };
                let got = read(&mut pos, byte_count);
                if rle4 {
                    for (i, &b) in got.iter().enumerate() {
                        out.push(b >> 4);
                        if i * 2 + 1 < count {
                            out.push(b & 0x0F);
                        }
                    }
                } else {
                    out.extend_from_slice(got);
                }
                if got.len() < byte_count || out.len() == dest {
                    break;
                }
                x += n;
                if !pos.is_multiple_of(2) {
                    pos += 1;
                }
            }
        }
    }
    if out.len() < dest {
        return Err(bad(F, "not enough image data (RLE runs end early)"));
    }
    out.truncate(dest);
    Ok(out)
}
