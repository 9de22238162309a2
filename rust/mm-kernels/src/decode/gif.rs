//! GIF, first frame, as Pillow 13 reads it: `GifImagePlugin` (palettes that are an identity gray
//! ramp mean mode L, a frame reaching past the screen grows the image, the area outside the
//! frame holds index 0 or the transparent index) and `GifDecode.c`'s LZW decoder, ported rule
//! for rule (it decodes whole sub-blocks only, so a cut inside the last one is "truncated").
//!
//! Why a reader of our own rather than the `gif` crate: valid files decode to the same pixels
//! either way (`tests/differential.rs` checks it), but malformed ones are where decoders part,
//! and the contract is to fail where Pillow fails and to give Pillow's pixels where it does not.
//! Pillow skips stray bytes between blocks, decodes a file without its trailer, grows the
//! image when the first frame reaches past the logical screen, and refuses a file cut inside
//! a data sub-block; each of those is a rule here, checked against Pillow by the Python parity
//! suites.

use super::convert::{convert_row, Lut, Palette, Source};
use super::{bad, limits, DecodeOptions, Decoded, Format, Header};
use crate::error::{KernelError, Result};
use crate::image::RgbImage;

const F: Format = Format::Gif;

/// What `_open` + `_seek(0)` learn before the pixel data.
struct Frame<'a> {
    width: u32,
    height: u32,
    /// The frame rectangle (x0, y0, x1, y1) inside the (possibly grown) image.
    extent: (u32, u32, u32, u32),
    /// `None`: mode L (no palette, or an identity gray ramp).
    palette: Option<&'a [u8]>,
    transparency: Option<u8>,
    interlaced: bool,
    lzw_bits: u8,
    /// Offset of the first data sub-block.
    data_start: usize,
}

fn truncated(what: &str) -> KernelError {
    bad(F, format!("truncated data ({what})"))
}

/// `_is_palette_needed`: false for a palette whose entry i is (i, i, i) throughout.
fn palette_needed(p: &[u8]) -> bool {
    p.chunks(3).enumerate().any(|(i, e)| {
        e.len() < 3 || !(e[0] as usize == i && e[1] as usize == i && e[2] as usize == i)
    })
}

fn read_frame(data: &[u8]) -> Result<Frame<'_>> {
    let head = data.get(..13).ok_or_else(|| truncated("header"))?;
    let mut width = u32::from(u16::from_le_bytes([head[6], head[7]]));
    let mut height = u32::from(u16::from_le_bytes([head[8], head[9]]));
    let flags = head[10];
    let mut pos = 13;
    let mut global: Option<&[u8]> = None;
    if flags & 0x80 != 0 {
        let n = 3usize << ((flags & 7) + 1);
        let p = &data[pos..(pos + n).min(data.len())];
        if !p.len().is_multiple_of(3) {
            return Err(truncated("global palette"));
        }
        pos += n;
        if palette_needed(p) {
            global = Some(p);
        }
    }

    // Pillow's `data()`: one sub-block, None for the terminator or at the end of the file;
    // a block cut by the end of the file comes back short.
    let read_block = |pos: &mut usize| -> Option<&[u8]> {
        let len = usize::from(*data.get(*pos)?);
        *pos += 1;
        if len == 0 {
            return None;
        }
        let block = &data[(*pos).min(data.len())..(*pos + len).min(data.len())];
        *pos += len;
        Some(block)
    };

    let mut transparency = None;
    loop {
        let Some(&sep) = data.get(pos) else {
            return Err(truncated("the file ends before the first image"));
        };
        pos += 1;
        match sep {
            b';' => return Err(bad(F, "no image before the GIF trailer")),
            b'!' => {
                let label = *data.get(pos).ok_or_else(|| truncated("extension label"))?;
                pos += 1;
                let first = read_block(&mut pos);
                match (label, first) {
                    (249, Some(block)) => {
                        let flags = *block.first().ok_or_else(|| truncated("graphic control"))?;
                        if flags & 1 != 0 {
                            transparency =
                                Some(*block.get(3).ok_or_else(|| truncated("graphic control"))?);
                        }
                        if block.len() < 3 {
                            return Err(truncated("graphic control extension"));
                        }
                    }
                    (254, mut block) => {
                        // Comments are read to their terminator, nothing more.
                        while block.is_some() {
                            block = read_block(&mut pos);
                        }
                        continue;
                    }
                    (255, Some(block)) if block.starts_with(b"NETSCAPE2.0") => {
                        read_block(&mut pos);
                    }
                    _ => {}
                }
                // As Pillow: skip further sub-blocks, even after an empty first one.
                while read_block(&mut pos).is_some() {}
            }
            b',' => {
                let d = data
                    .get(pos..pos + 9)
                    .ok_or_else(|| truncated("image descriptor"))?;
                pos += 9;
                let le = |i: usize| u32::from(u16::from_le_bytes([d[i], d[i + 1]]));
                let (x0, y0) = (le(0), le(2));
                let (x1, y1) = (x0 + le(4), y0 + le(6));
                width = width.max(x1);
                height = height.max(y1);
                let flags = d[8];
                let interlaced = flags & 64 != 0;
                // `palette`: Some(Some(p)) local and needed, Some(None) local identity ramp.
                let mut local: Option<Option<&[u8]>> = None;
                if flags & 0x80 != 0 {
                    let n = 3usize << ((flags & 7) + 1);
                    let p = &data[pos.min(data.len())..(pos + n).min(data.len())];
                    if !p.len().is_multiple_of(3) {
                        return Err(truncated("local palette"));
                    }
                    pos += n;
                    local = Some(palette_needed(p).then_some(p));
                }
                let lzw_bits = *data.get(pos).ok_or_else(|| truncated("LZW code size"))?;
                pos += 1;
                let palette = match local {
                    Some(p) => p,
                    None => global,
                };
                return Ok(Frame {
                    width,
                    height,
                    extent: (x0, y0, x1, y1),
                    palette,
                    transparency,
                    interlaced,
                    lzw_bits,
                    data_start: pos,
                });
            }
            _ => {} // Pillow skips unknown bytes one at a time
        }
    }
}

pub(crate) fn probe(data: &[u8]) -> Result<Header> {
    let f = read_frame(data)?;
    Header::unrotated(F, f.width, f.height)
}

/// Pillow's mode of the first frame: "P" with a palette, "L" without one (or with an
/// identity gray ramp); its transparent index is Pillow's transparency entry.
pub(crate) fn source_mode(data: &[u8]) -> Result<super::SourceMode> {
    let f = read_frame(data)?;
    let mode = if f.palette.is_some() { "P" } else { "L" };
    Ok(super::SourceMode::new(mode, f.transparency.is_some()))
}

pub(crate) fn decode(data: &[u8], opts: &DecodeOptions) -> Result<Decoded> {
    let f = read_frame(data)?;
    let (w, h) = (u64::from(f.width), u64::from(f.height));
    limits::check(F, w, h, opts)?;
    check_compressed_size(data, &f)?;
    let (width, height) = (f.width as usize, f.height as usize);
    // The image starts as index 0, or the transparent index when there is one.
    let mut indices = limits::alloc(limits::buffer_len(F, w, h, 1)?)?;
    if let Some(t) = f.transparency {
        indices.fill(t);
    }
    let (x0, y0, x1, y1) = f.extent;
    let region = Region {
        stride: width,
        x0: x0 as usize,
        y0: y0 as usize,
        xsize: (x1 - x0) as usize,
        ysize: (y1 - y0) as usize,
    };
    if region.xsize == 0 || region.ysize == 0 {
        return Err(bad(F, "first frame has zero size"));
    }
    lzw_decode(
        data,
        f.data_start,
        f.lzw_bits,
        f.interlaced,
        &region,
        &mut indices,
    )?;

    let lut = match f.palette {
        Some(p) => {
            let mut pal = Palette::new();
            pal.set_colours(p, 3, [0, 1, 2]);
            if let Some(t) = f.transparency {
                pal.rgba[usize::from(t)][3] = 0;
            }
            pal.lut(opts.alpha, f.transparency.is_some())
        }
        None => Lut::gray(opts.alpha, f.transparency.map(u32::from)),
    };
    let mut out = limits::alloc(limits::buffer_len(F, w, h, 3)?)?;
    let source = Source::Indexed(&lut);
    for (src, dst) in indices
        .chunks_exact(width)
        .zip(out.chunks_exact_mut(width * 3))
    {
        convert_row(&source, opts.alpha, src, dst);
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

/// LZW's highest expansion, in pixels per byte of code: a code of `b` bits names a string of at
/// most `2^b` entries (the table never holds more), so the best is `4096` pixels for 12 bits.
const MAX_LZW_PIXELS_PER_BYTE: u64 = 4096 * 8 / 12 + 1;

/// Refuse, before the index buffer is allocated, a frame whose LZW data (at most the rest of
/// the file) cannot fill it even at LZW's highest ratio: Pillow refuses a frame the data does
/// not complete, and a 100-byte file declaring 13000x13000 needs no 169 MB buffer to find that.
fn check_compressed_size(data: &[u8], f: &Frame<'_>) -> Result<()> {
    let (x0, y0, x1, y1) = f.extent;
    let area = u64::from(x1 - x0) * u64::from(y1 - y0);
    let rest = data.len().saturating_sub(f.data_start) as u64;
    if rest
        .saturating_mul(MAX_LZW_PIXELS_PER_BYTE)
        .saturating_add(4096)
        < area
    {
        return Err(truncated(&format!(
            "{rest} bytes left for LZW data cannot fill a {}x{} frame (at most \
             {MAX_LZW_PIXELS_PER_BYTE} pixels per byte)",
            x1 - x0,
            y1 - y0
        )));
    }
    Ok(())
}

/// Where the frame lands in the index buffer.
struct Region {
    stride: usize,
    x0: usize,
    y0: usize,
    xsize: usize,
    ysize: usize,
}

const GIFBITS: u32 = 12;
const GIFTABLE: usize = 1 << GIFBITS;

/// Port of Pillow's `ImagingGifDecode` over the whole remaining file.
fn lzw_decode(
    data: &[u8],
    start: usize,
    bits: u8,
    interlaced: bool,
    r: &Region,
    out: &mut [u8],
) -> Result<()> {
    if bits > 12 {
        return Err(bad(F, format!("bad LZW minimum code size {bits}")));
    }
    let clear = 1usize << bits;
    let end = clear + 1;
    let mut interlace = u8::from(interlaced);
    let mut step = if interlaced { 8usize } else { 1 };

    let mut link = vec![0u16; GIFTABLE];
    let mut dat = vec![0u8; GIFTABLE];
    let mut buffer = vec![0u8; GIFTABLE];
    let mut bufferindex = GIFTABLE;
    let (mut x, mut y) = (0usize, 0usize);
    let mut pos = start;
    let mut blocksize = 0usize;
    let mut bitbuffer: u64 = 0;
    let mut bitcount: u32 = 0;
    let mut state = 1u8;
    let (mut next, mut codesize, mut codemask) = (0usize, 0u32, 0usize);
    let (mut lastdata, mut lastcode) = (0u8, 0usize);

    // NEWLINE: advance to the next row (through the interlace passes); Ok(true) when done.
    let newline = |x: &mut usize, y: &mut usize, step: &mut usize, interlace: &mut u8| -> bool {
        *x = 0;
        *y += *step;
        while *y >= r.ysize {
            match *interlace {
                1 => {
                    *y = 4;
                    *interlace = 2;
                }
                2 => {
                    *step = 4;
                    *y = 2;
                    *interlace = 3;
                }
                3 => {
                    *step = 2;
                    *y = 1;
                    *interlace = 0;
                }
                _ => return true,
            }
        }
        false
    };

    let broken = || bad(F, "broken LZW data stream");
    loop {
        if state == 1 {
            next = clear + 2;
            codesize = u32::from(bits) + 1;
            codemask = (1 << codesize) - 1;
            bufferindex = GIFTABLE;
            state = 2;
        }
        let (p_start, p_len, single): (usize, usize, u8);
        if bufferindex < GIFTABLE {
            p_start = bufferindex;
            p_len = GIFTABLE - bufferindex;
            single = 0;
            bufferindex = GIFTABLE;
        } else {
            while bitcount < codesize {
                if blocksize > 0 {
                    bitbuffer |= u64::from(data[pos]) << bitcount;
                    pos += 1;
                    bitcount += 8;
                    blocksize -= 1;
                } else {
                    // A new sub-block is only started when it is complete.
                    let Some(&c) = data.get(pos) else {
                        return Err(truncated("image file is truncated"));
                    };
                    if data.len() - pos < usize::from(c) + 1 {
                        return Err(truncated("image file is truncated"));
                    }
                    blocksize = usize::from(c);
                    pos += 1;
                }
            }
            let mut c = (bitbuffer as usize) & codemask;
            bitbuffer >>= codesize;
            bitcount -= codesize;
            if c == clear {
                if state != 2 {
                    state = 1;
                }
                continue;
            }
            if c == end {
                // Pillow stops here and waits for data that would resume the stream.
                return Err(truncated("LZW data ended before the frame was complete"));
            }
            if state == 2 {
                if c > clear {
                    return Err(broken());
                }
                lastdata = c as u8;
                lastcode = c;
                state = 3;
            } else {
                let thiscode = c;
                if c > next {
                    return Err(broken());
                }
                if c == next {
                    if bufferindex == 0 {
                        return Err(broken());
                    }
                    bufferindex -= 1;
                    buffer[bufferindex] = lastdata;
                    c = lastcode;
                }
                while c >= clear {
                    if bufferindex == 0 || c >= GIFTABLE {
                        return Err(broken());
                    }
                    bufferindex -= 1;
                    buffer[bufferindex] = dat[c];
                    c = usize::from(link[c]);
                }
                lastdata = c as u8;
                if next < GIFTABLE {
                    dat[next] = c as u8;
                    link[next] = lastcode as u16;
                    if next == codemask && codesize < GIFBITS {
                        codesize += 1;
                        codemask = (1 << codesize) - 1;
                    }
                    next += 1;
                }
                lastcode = thiscode;
            }
            p_start = 0;
            p_len = 1;
            single = 1;
        }
        if y >= r.ysize {
            return Err(bad(F, "LZW data overruns the frame"));
        }
        for k in 0..p_len {
            let v = if single == 1 {
                lastdata
            } else {
                buffer[p_start + k]
            };
            out[(r.y0 + y) * r.stride + r.x0 + x] = v;
            x += 1;
            if x >= r.xsize && newline(&mut x, &mut y, &mut step, &mut interlace) {
                return Ok(());
            }
        }
    }
}
