//! PNG as Pillow reads it: the chunk walk of `PngImagePlugin` (modes, tRNS, metadata, CRCs
//! checked before the image data only, later chunks still read after it), and `ZipDecode.c`'s
//! row loop (stop at the last row, or at the end of the zlib stream with the rest left zero;
//! running out of image data before that is "truncated").
//!
//! Why a reader of our own rather than the `png` crate: on valid files any decoder gives the
//! same pixels, but on malformed ones each fails its own way, and the contract is Pillow's.
//! Pillow decodes a PNG whose zlib stream ends early (the missing rows stay zero), one without
//! IEND or with junk after the image data, and one whose chunks after IDAT have bad CRCs; it
//! refuses a bad CRC before IDAT, a short chunk, an unknown filter byte, an over-large text
//! chunk. A general-purpose decoder has no reason to draw these lines where Pillow does, and
//! where it differs a server built on it would accept what the reference rejects, or fail
//! what the reference decodes. This module follows Pillow's rules one by one; valid files are checked against the `png` crate
//! (`tests/differential.rs`) and everything else against Pillow (the Python parity suites).
//!
//! The parts, in the order a decode runs them:
//! - `chunks`: the chunk walk (`_open` up to the first IDAT, the IDAT run, `load_end`'s chunks
//!   after it) and what the header chunks set (mode, palette, transparency);
//! - `meta`: the text / eXIf chunks that carry the EXIF orientation;
//! - `inflate`: the zlib stream cut into raw rows, and how a raw row unpacks (16-bit samples
//!   reduced to the 8-bit ones of Pillow's mode: "I;16" gray clamped to 255, the high byte of
//!   RGB, RGBA and gray + alpha), after which every layout converts as an 8-bit one does;
//! - `unfilter`: the five row filters;
//! - `adam7`: the interlaced passes.

mod adam7;
mod chunks;
mod inflate;
mod meta;
mod unfilter;

use super::convert::{convert_row, replace_transparent, Lut, Palette, Source};
use super::{bad, limits, Alpha, DecodeOptions, Decoded, Format, Header};
use crate::error::{KernelError, Result};
use crate::feed::RowWriter;
use crate::image::RgbImage;
use crate::par::Par;
use chunks::{open, read_trailing_chunks, skip_image_data, IdatReader, Mode, Opened, Trns};
use inflate::{inflate_rows, unpack, Geometry};

const F: Format = Format::Png;

fn truncated(what: &str) -> KernelError {
    bad(F, format!("truncated data ({what})"))
}

pub(crate) fn probe(data: &[u8]) -> Result<Header> {
    let o = open(data)?;
    limits::non_empty(F, o.width.into(), o.height.into())?;
    // The orientation may sit in chunks after the image data: walk them (no pixel decode).
    let mut info = o.info;
    let after = skip_image_data(data, o.idat);
    read_trailing_chunks(data, after, &mut info)?;
    Ok(Header {
        width: o.width,
        height: o.height,
        orientation: info.meta.orientation(),
    })
}

/// Pillow's mode of the PNG layout, and whether a tRNS chunk (before or after the image
/// data: Pillow reads both by the time the pixels are loaded) gives it a transparency entry.
pub(crate) fn source_mode(data: &[u8]) -> Result<super::SourceMode> {
    let o = open(data)?;
    let mut info = o.info;
    let after = skip_image_data(data, o.idat);
    read_trailing_chunks(data, after, &mut info)?;
    let mode = match o.mode {
        Mode::Bit => "1",
        Mode::Gray(_) => "L",
        Mode::Indexed(_) => "P",
        Mode::Rgb | Mode::Rgb16 => "RGB",
        Mode::GrayAlpha => "LA",
        Mode::Rgba | Mode::Rgba16 | Mode::GrayAlpha16 => "RGBA",
        Mode::Gray16 => "I;16",
    };
    Ok(super::SourceMode::new(mode, info.trns.is_some()))
}

/// The checks of a decode up to the pixel data: the file opened as `_open` does, the limits,
/// the row geometry, and enough image data for it.
fn opened<'a>(data: &'a [u8], opts: &DecodeOptions) -> Result<(Opened<'a>, Geometry)> {
    let o = open(data)?;
    limits::check(F, u64::from(o.width), u64::from(o.height), opts)?;
    let geometry = Geometry::new(o.mode, o.width as usize, o.height as usize)?;
    check_compressed_size(data, o.idat, &geometry)?;
    Ok((o, geometry))
}

pub(crate) fn decode(data: &[u8], opts: &DecodeOptions) -> Result<Decoded> {
    let (o, geometry) = opened(data, opts)?;
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
    if opts.alpha == Alpha::White && matches!(o.mode, Mode::Rgb | Mode::Rgb16) {
        // `rgbT2rgba` matches the colour's low bytes against the 8-bit pixel (for 16-bit RGB,
        // the samples' high bytes): Pillow's rule, odd as it is for 16-bit files.
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

impl<'a> Render<'a, '_> {
    /// The lookup table of modes whose samples are looked up (palette, 1/2/4/8-bit and 16-bit
    /// gray), with the palette, transparency and alpha mode folded in.
    fn lut(&self, palette: Option<&[u8]>, trns: Option<&Trns>, alpha: Alpha) -> Option<Box<Lut>> {
        match self.mode {
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
            Mode::Bit | Mode::Gray(_) | Mode::Gray16 => match trns {
                Some(Trns::Gray(t)) => Some(Lut::gray(alpha, Some(*t))),
                _ => Some(Lut::gray(alpha, None)),
            },
            _ => None,
        }
    }

    /// How an unpacked row becomes RGB (RGB-mode transparency is applied afterwards).
    fn source<'l>(&self, lut: Option<&'l Lut>) -> Source<'l> {
        match (self.mode, lut) {
            (_, Some(lut)) => Source::Indexed(lut),
            (Mode::GrayAlpha | Mode::GrayAlpha16, _) => Source::GrayAlpha,
            (Mode::Rgba | Mode::Rgba16, _) => Source::Rgba,
            _ => Source::Rgb { trns: None },
        }
    }

    /// The RGB pixels (RGB-mode transparency still to apply) and where the image data ended.
    fn run(
        &self,
        palette: Option<&[u8]>,
        trns: Option<&Trns>,
        alpha: Alpha,
    ) -> Result<(Vec<u8>, usize)> {
        let (mode, g) = (self.mode, self.g);
        let mut out = limits::alloc(limits::buffer_len(F, g.width as u64, g.height as u64, 3)?)?;
        let lut = self.lut(palette, trns, alpha);
        let source = self.source(lut.as_deref());
        let row_out = g.width * 3;
        let row_in = g.width * mode.unpacked_bytes();
        let end = if self.interlaced {
            let mut unpacked = limits::alloc(g.pixels() * mode.unpacked_bytes())?;
            let end = inflate_rows(self.data, self.idat, g, true, |pass, y, raw| {
                g.scatter(mode, pass, y, raw, &mut unpacked);
                Ok(())
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
            // Only 8-bit RGB rows are already the output; 16-bit ones are reduced first.
            let identity = mode == Mode::Rgb && source.is_identity(alpha);
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
                Ok(())
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

    /// [`Render::run`] of a non-interlaced image into `rows` (the final RGB, RGB-mode
    /// transparency `rgb_trns` applied row by row), published every few rows; rows the zlib
    /// stream never reached are written last, as Pillow leaves them. Returns where the image
    /// data ended. Stops with [`KernelError::Cancelled`] once `par`'s flag is set.
    fn run_rows(
        &self,
        plan: &RowPlan<'_>,
        rows: &mut RowWriter<'_>,
        par: &Par<'_>,
    ) -> Result<usize> {
        const BATCH: usize = 8;
        let (mode, g, alpha) = (self.mode, self.g, plan.alpha);
        let lut = self.lut(plan.palette, plan.trns.as_ref(), alpha);
        let source = self.source(lut.as_deref());
        let row_out = g.width * 3;
        let mut unpacked = vec![0u8; g.width * mode.unpacked_bytes()];
        let mut line = vec![0u8; row_out];
        let identity = mode == Mode::Rgb && source.is_identity(alpha);
        let put = |y: usize, line: &mut [u8], rows: &mut RowWriter<'_>| -> Result<()> {
            if let Some(t) = plan.rgb_trns {
                replace_transparent(line, t);
            }
            let at = (y - rows.published()) * row_out;
            rows.unpublished_mut()[at..at + row_out].write_copy_of_slice(line);
            if (y + 1).is_multiple_of(BATCH) {
                rows.publish(y + 1);
                par.check()?;
            }
            Ok(())
        };
        let mut done = 0usize;
        let end = inflate_rows(self.data, self.idat, g, false, |_, y, raw| {
            if identity {
                line.copy_from_slice(&raw[..row_out]);
            } else {
                unpack(mode, raw, g.width, &mut unpacked);
                convert_row(&source, alpha, &unpacked, &mut line);
            }
            done = y + 1;
            put(y, &mut line, rows)
        })?;
        unpacked.fill(0);
        for y in done..g.height {
            line.fill(0);
            if !identity {
                convert_row(&source, alpha, &unpacked, &mut line);
            }
            put(y, &mut line, rows)?;
        }
        rows.publish(g.height);
        Ok(end)
    }
}

/// What a row-by-row decode of a PNG needs from its chunks, read before any pixel.
pub(crate) struct RowPlan<'a> {
    /// The palette as the file was opened (Pillow fixes it then).
    palette: Option<&'a [u8]>,
    /// The transparency after the chunks that follow the image data.
    trns: Option<Trns>,
    /// An RGB-mode transparent colour to turn white (the low bytes, as Pillow matches them).
    rgb_trns: Option<[u8; 3]>,
    alpha: Alpha,
}

/// The header half of [`decode`] for a row-by-row decode: the same checks in the same order,
/// then `Some(((width, height), plan))` when the rows come out final and in order: not
/// interlaced, and no orientation to apply, which the chunks after the image data may set, so
/// they are read now (as a header probe reads them). `None` for every other image, and for one
/// whose trailing chunks are broken: decoded whole, it reports them as Pillow does.
pub(crate) fn stream_header<'a>(
    data: &'a [u8],
    opts: &DecodeOptions,
) -> Result<Option<((u32, u32), RowPlan<'a>)>> {
    let (o, _) = opened(data, opts)?;
    let mut info = o.info;
    if info.interlaced {
        return Ok(None);
    }
    let palette = info.palette;
    if read_trailing_chunks(data, skip_image_data(data, o.idat), &mut info).is_err() {
        return Ok(None);
    }
    if opts.exif_orientation && info.meta.orientation() != 1 {
        return Ok(None);
    }
    let rgb_trns = match (&info.trns, o.mode) {
        (Some(Trns::Rgb([r, g, b])), Mode::Rgb | Mode::Rgb16) if opts.alpha == Alpha::White => {
            Some([(r & 0xff) as u8, (g & 0xff) as u8, (b & 0xff) as u8])
        }
        _ => None,
    };
    let plan = RowPlan {
        palette,
        trns: info.trns,
        rgb_trns,
        alpha: opts.alpha,
    };
    Ok(Some(((o.width, o.height), plan)))
}

/// Decode the rows of a PNG that [`stream_header`] planned into `rows` (its `width x height`),
/// publishing them as they are final, then read the chunks after the image data as [`decode`]
/// does (a broken one fails the decode, after the rows): the pixels and errors of [`decode`].
pub(crate) fn decode_rows(
    data: &[u8],
    plan: &RowPlan<'_>,
    rows: &mut RowWriter<'_>,
    par: &Par<'_>,
) -> Result<()> {
    let o = open(data)?;
    let geometry = Geometry::new(o.mode, o.width as usize, o.height as usize)?;
    if rows.len() != geometry.pixels() * 3 {
        return Err(KernelError::InvalidArgument(
            "the row feed does not match the PNG".into(),
        ));
    }
    let job = Render {
        data,
        idat: o.idat,
        mode: o.mode,
        g: &geometry,
        interlaced: false,
    };
    let end = job.run_rows(plan, rows, par)?;
    let mut info = o.info;
    read_trailing_chunks(data, end, &mut info)
}
