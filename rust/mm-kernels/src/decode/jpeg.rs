//! JPEG: Pillow's marker walk (what it accepts, its size and mode, EXIF/XMP), then libjpeg-turbo
//! (built from source by turbojpeg-sys) through `jpeg_shim.c`, straight into the output buffer.

use std::ffi::{c_char, c_int, c_uint, c_void};

use super::convert::{compact4_in_place, inverted_cmyk_to_rgb};
use super::{bad, exif, limits, DecodeOptions, Decoded, Format, Header};
use crate::error::KernelError;
use crate::error::Result;
use crate::feed::RowWriter;
use crate::image::RgbImage;
use crate::par::Par;

// Links the static libjpeg-turbo that the shim calls into.
use turbojpeg_sys as _;

const F: Format = Format::Jpeg;

extern "C" {
    fn mm_jpeg_decode(
        data: *const u8,
        len: usize,
        out: *mut u8,
        out_len: usize,
        width: c_uint,
        height: c_uint,
        components: c_int,
        msg: *mut c_char,
        msg_len: usize,
    ) -> c_int;

    fn mm_jpeg_decode_rows(
        data: *const u8,
        len: usize,
        out: *mut u8,
        out_len: usize,
        width: c_uint,
        height: c_uint,
        components: c_int,
        msg: *mut c_char,
        msg_len: usize,
        done: extern "C" fn(*mut c_void, c_uint) -> c_int,
        ctx: *mut c_void,
    ) -> c_int;
}

/// What Pillow's `JpegImageFile._open` learns from the markers before the first scan.
struct Markers<'a> {
    width: u32,
    height: u32,
    layers: u8,
    /// The first "Exif\0\0" APP1 segment, with later ones appended minus their header.
    exif: Option<Vec<u8>>,
    /// The last XMP APP1 packet.
    xmp: Option<&'a [u8]>,
}

impl Markers<'_> {
    fn orientation(&self) -> u8 {
        exif::orientation(self.exif.as_deref(), self.xmp)
    }
}

/// Walk the markers as `JpegImageFile._open` does, up to the first SOS.
fn read_markers(data: &[u8]) -> Result<Markers<'_>> {
    let mut m = Markers {
        width: 0,
        height: 0,
        layers: 0,
        exif: None,
        xmp: None,
    };
    let mut sof_seen = false;
    let mut pos = 3; // past FF D8 FF; that last FF starts the next marker
    let mut cur = Some(0xFFu8);
    while let Some(byte) = cur {
        if byte != 0xFF {
            // Pillow skips non-0xFF junk one byte at a time.
            cur = data.get(pos).copied();
            pos += 1;
            continue;
        }
        let Some(&second) = data.get(pos) else { break };
        pos += 1;
        let marker = 0xFF00 | u16::from(second);
        match marker {
            0xFFFF => {
                cur = Some(0xFF); // fill byte: the second FF starts the marker
                continue;
            }
            0xFF00 => {
                cur = data.get(pos).copied();
                pos += 1;
                continue;
            }
            0xFFC0..=0xFFFE => {}
            _ => return Err(bad(F, format!("no marker found (0x{marker:04X})"))),
        }
        if has_segment(marker) {
            let len_bytes = data
                .get(pos..pos + 2)
                .ok_or_else(|| truncated("marker length"))?;
            let n = i64::from(u16::from_be_bytes([len_bytes[0], len_bytes[1]])) - 2;
            pos += 2;
            let n = usize::try_from(n).unwrap_or(0);
            let seg = data
                .get(pos..pos + n)
                .ok_or_else(|| truncated("marker segment"))?;
            pos += n;
            handle_segment(&mut m, &mut sof_seen, marker, seg)?;
            if marker == 0xFFDA {
                if !sof_seen || m.width == 0 || m.height == 0 {
                    return Err(bad(F, "no frame header (SOF) before the image data"));
                }
                return Ok(m);
            }
        }
        cur = data.get(pos).copied();
        pos += 1;
    }
    Err(truncated("no image data (SOS marker) found"))
}

/// Markers Pillow reads a length-prefixed segment for (the rest carry no payload).
fn has_segment(marker: u16) -> bool {
    !matches!(marker, 0xFFC8 | 0xFFD0..=0xFFD9 | 0xFFF0..=0xFFFD)
}

fn handle_segment<'a>(
    m: &mut Markers<'a>,
    sof_seen: &mut bool,
    marker: u16,
    s: &'a [u8],
) -> Result<()> {
    match marker {
        // SOF0-3, 5-7, 9-11, 13-15 and DHP share Pillow's SOF handler.
        0xFFC0..=0xFFC3 | 0xFFC5..=0xFFC7 | 0xFFC9..=0xFFCB | 0xFFCD..=0xFFCF | 0xFFDE => {
            let b = |i: usize| {
                s.get(i)
                    .copied()
                    .ok_or_else(|| bad(F, "frame header too short"))
            };
            let height = u16::from_be_bytes([b(1)?, b(2)?]);
            let width = u16::from_be_bytes([b(3)?, b(4)?]);
            let bits = b(0)?;
            if bits != 8 {
                return Err(bad(
                    F,
                    format!("cannot handle {bits}-bit samples (only 8-bit)"),
                ));
            }
            let layers = b(5)?;
            if !matches!(layers, 1 | 3 | 4) {
                return Err(bad(F, format!("cannot handle {layers}-layer images")));
            }
            m.width = u32::from(width);
            m.height = u32::from(height);
            m.layers = layers;
            *sof_seen = true;
        }
        0xFFDB => {
            // Pillow validates the quantization tables' lengths.
            let mut rest = s;
            while let Some(&v) = rest.first() {
                let len = 1 + if v >> 4 == 0 { 64 } else { 128 };
                rest = rest
                    .get(len..)
                    .ok_or_else(|| bad(F, "bad quantization table marker"))?;
            }
        }
        // Pillow reads the JFIF version and the Adobe version unguarded: too short is an error.
        0xFFE0 if s.starts_with(b"JFIF") && s.len() < 7 => {
            return Err(bad(F, "truncated JFIF header"));
        }
        0xFFEE if s.starts_with(b"Adobe") && s.len() < 7 => {
            return Err(bad(F, "truncated Adobe header"));
        }
        0xFFED if s.starts_with(b"Photoshop 3.0\x00") => check_photoshop(s)?,
        0xFFE1 if s.starts_with(b"Exif\x00\x00") => match &mut m.exif {
            Some(exif) => exif.extend_from_slice(&s[6..]),
            None => m.exif = Some(s.to_vec()),
        },
        0xFFE1 if s.starts_with(b"http://ns.adobe.com/xap/1.0/\x00") => {
            let nul = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            m.xmp = Some(&s[(nul + 1).min(s.len())..]);
        }
        _ => {}
    }
    Ok(())
}

/// Pillow's walk over Photoshop image resource blocks: a block cut right after its code
/// raises an IndexError there (other short reads are caught and end the walk).
fn check_photoshop(s: &[u8]) -> Result<()> {
    let mut offset = 14usize;
    while s.get(offset..offset + 4) == Some(b"8BIM") {
        offset += 4;
        if offset + 2 > s.len() {
            return Ok(());
        }
        offset += 2;
        let name_len = *s
            .get(offset)
            .ok_or_else(|| bad(F, "truncated Photoshop resource"))?;
        offset += 1 + usize::from(name_len);
        offset += offset & 1;
        let Some(size) = s.get(offset..offset + 4) else {
            return Ok(());
        };
        let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]) as usize;
        offset = offset.saturating_add(4).saturating_add(size);
        offset += offset & 1;
    }
    Ok(())
}

/// Pillow's mode from the frame header's component count: 1 "L", 3 "RGB", 4 "CMYK" (YCCK
/// too); a JPEG has no transparency.
pub(crate) fn source_mode(data: &[u8]) -> Result<super::SourceMode> {
    let mode = match read_markers(data)?.layers {
        1 => "L",
        4 => "CMYK",
        _ => "RGB",
    };
    Ok(super::SourceMode::new(mode, false))
}

fn truncated(what: &str) -> crate::error::KernelError {
    bad(F, format!("truncated data ({what})"))
}

pub(crate) fn probe(data: &[u8]) -> Result<Header> {
    let m = read_markers(data)?;
    Ok(Header {
        width: m.width,
        height: m.height,
        orientation: m.orientation(),
    })
}

pub(crate) fn decode(data: &[u8], opts: &DecodeOptions) -> Result<Decoded> {
    let m = read_markers(data)?;
    let (w, h) = (u64::from(m.width), u64::from(m.height));
    limits::check(F, w, h, opts)?;
    // Pillow: 1 layer is L, 3 RGB (both asked from libjpeg as RGB here: the gray -> RGB step
    // is the same replication), 4 CMYK read as "CMYK;I" (Adobe's inverted polarity).
    let components: u64 = if m.layers == 4 { 4 } else { 3 };
    let len = limits::buffer_len(F, w, h, components)?;
    // Not zeroed: libjpeg writes every byte before it reports success.
    let mut buf = limits::alloc_unfilled(len)?;
    let mut msg = [0 as c_char; 200];
    // SAFETY: `data` is valid for its length and `buf` has room for `len` bytes; the shim
    // writes at most `len` bytes (it checks `width * components * height <= out_len`) and a
    // NUL-terminated message of at most `msg.len()` bytes.
    let rc = unsafe {
        mm_jpeg_decode(
            data.as_ptr(),
            data.len(),
            buf.as_mut_ptr(),
            len,
            m.width,
            m.height,
            components as c_int,
            msg.as_mut_ptr(),
            msg.len(),
        )
    };
    shim_result(rc, &msg)?;
    // SAFETY: the shim succeeded, so it wrote all `height` rows of `width * components` bytes,
    // i.e. every one of the `len` bytes reserved.
    unsafe { buf.set_len(len) };
    let pixels = (w * h) as usize;
    if components == 4 {
        compact4_in_place(&mut buf, pixels, inverted_cmyk_to_rgb);
    }
    let image = RgbImage {
        width: m.width as usize,
        height: m.height as usize,
        data: buf,
    };
    Ok(Decoded {
        image,
        orientation: m.orientation(),
    })
}

/// The shim's return code as a result; `msg` is the NUL-terminated message it left.
fn shim_result(rc: c_int, msg: &[c_char]) -> Result<()> {
    match rc {
        0 => Ok(()),
        2 => Err(bad(F, "truncated data (image file is truncated)")),
        3 => Err(bad(F, "the frame header does not match the image data")),
        4 => Err(KernelError::Cancelled),
        _ => {
            let bytes: Vec<u8> = msg
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            Err(bad(
                F,
                if text.is_empty() {
                    "corrupt data".into()
                } else {
                    text
                },
            ))
        }
    }
}

/// The header half of [`decode`] for a row-by-row decode: the same checks in the same order,
/// then `(width, height)` when the rows come out of libjpeg as final RGB (not CMYK, no
/// orientation to apply), else `None`.
pub(crate) fn stream_header(data: &[u8], opts: &DecodeOptions) -> Result<Option<(u32, u32)>> {
    let m = read_markers(data)?;
    limits::check(F, u64::from(m.width), u64::from(m.height), opts)?;
    if m.layers == 4 || (opts.exif_orientation && m.orientation() != 1) {
        return Ok(None);
    }
    Ok(Some((m.width, m.height)))
}

/// What the shim's row callback reaches: the feed's writer and the call's cancel flag.
struct RowsCtx<'w, 'f, 'p> {
    writer: &'w mut RowWriter<'f>,
    par: &'p Par<'p>,
}

/// Called by the shim between batches of scanlines (never from inside libjpeg): publishes the
/// rows, and answers non-zero (stop) once the cancel flag is set.
extern "C" fn rows_done(ctx: *mut c_void, rows: c_uint) -> c_int {
    // SAFETY: `ctx` is the `RowsCtx` that `decode_rows` passed, alive for the whole shim call
    // and used by nothing else meanwhile.
    let ctx = unsafe { &mut *ctx.cast::<RowsCtx<'_, '_, '_>>() };
    ctx.writer.publish(rows as usize);
    c_int::from(ctx.par.cancelled())
}

/// Decode RGB rows straight into `writer`'s buffer (`width x height`, from [`stream_header`]),
/// publishing each batch as libjpeg finishes it: the pixels and errors of [`decode`]. Stops
/// with [`KernelError::Cancelled`] between batches once `par`'s cancel flag is set.
pub(crate) fn decode_rows(
    data: &[u8],
    width: u32,
    height: u32,
    writer: &mut RowWriter<'_>,
    par: &Par<'_>,
) -> Result<()> {
    let out = writer.as_mut_ptr();
    let out_len = writer.len();
    let mut msg = [0 as c_char; 200];
    let mut ctx = RowsCtx { writer, par };
    let ctx: *mut RowsCtx<'_, '_, '_> = &mut ctx;
    // SAFETY: `data` is valid for its length; `out` is the writer's buffer of `out_len` bytes
    // (the shim checks `width * 3 * height <= out_len`), written only at rows libjpeg has not
    // finished yet, i.e. at or after what `rows_done` published; `msg` as in `decode`; `ctx`
    // outlives the call.
    let rc = unsafe {
        mm_jpeg_decode_rows(
            data.as_ptr(),
            data.len(),
            out,
            out_len,
            width,
            height,
            3,
            msg.as_mut_ptr(),
            msg.len(),
            rows_done,
            ctx.cast(),
        )
    };
    shim_result(rc, &msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_err(data: &[u8]) -> String {
        match decode(data, &DecodeOptions::default()) {
            Err(e @ KernelError::Decode { .. }) => e.to_string(),
            Err(e) => panic!("expected a decode error, got {e}"),
            Ok(_) => panic!("expected an error"),
        }
    }

    #[test]
    fn header_only_and_broken_headers_are_decode_errors() {
        assert!(decode_err(b"\xff\xd8\xff").contains("truncated"));
        assert!(decode_err(b"\xff\xd8\xff\xe0\x00\x10JFIF").contains("truncated"));
        assert!(decode_err(b"\xff\xd8\xff\x01\x00").contains("no marker"));
        // A 12-bit frame header.
        let sof12 = b"\xff\xd8\xff\xc0\x00\x0b\x0c\x00\x10\x00\x10\x01\x01\x11\x00\xff\xda\x00\x02";
        assert!(decode_err(sof12).contains("12-bit"));
        // SOS without any frame header.
        assert!(decode_err(b"\xff\xd8\xff\xda\x00\x02").contains("SOF"));
    }

    #[test]
    fn garbage_after_a_valid_header_is_an_error_not_a_panic() {
        let mut data =
            b"\xff\xd8\xff\xc0\x00\x0b\x08\x00\x10\x00\x10\x01\x01\x11\x00\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00"
                .to_vec();
        data.extend_from_slice(&[0x55; 64]);
        let err = decode(&data, &DecodeOptions::default()).unwrap_err();
        assert!(
            matches!(err, KernelError::Decode { format: "JPEG", .. }),
            "{err}"
        );
    }
}
