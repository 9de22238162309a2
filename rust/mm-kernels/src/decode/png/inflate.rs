//! Pillow's `ZipDecode.c` row loop: the zlib stream of the IDAT run inflated one raw row at a
//! time, each unfiltered as soon as it is whole; the image ends at its last row or where the
//! zlib stream ends (later rows stay zero), and running out of IDAT data before either is
//! "truncated". Also how a raw row unpacks into one byte per sample (16-bit samples reduced to
//! 8 as Pillow's unpackers and its "I;16" conversions do).

use flate2::{Decompress, FlushDecompress, Status};

use super::adam7::{ROW_INCREMENT, STARTING_ROW};
use super::chunks::{IdatReader, Mode};
use super::unfilter::unfilter;
use super::{truncated, F};
use crate::decode::bad;
use crate::error::Result;

/// Row sizes of the raw (filtered) image.
pub(super) struct Geometry {
    pub(super) width: usize,
    pub(super) height: usize,
    pub(super) bits: u64,
    /// Bytes of one full raw row (without the filter byte).
    pub(super) row_bytes: usize,
    /// Filter distance in bytes.
    pub(super) bpp: usize,
}

impl Geometry {
    pub(super) fn new(mode: Mode, width: usize, height: usize) -> Result<Self> {
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

    pub(super) fn pixels(&self) -> usize {
        self.width * self.height
    }
}

/// The `i`-th sub-byte sample of a packed row, unpacked as Pillow's rawmode does.
#[inline]
pub(super) fn sample(mode: Mode, raw: &[u8], i: usize) -> u8 {
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

/// 16-bit samples (big-endian pairs in `raw`) to the 8-bit ones Pillow's mode holds, one per
/// byte of `out`: "I;16" gray clamps (`I16_RGB`: 255 when the high byte is set, else the low
/// byte), the "RGB;16B" / "RGBA;16B" / "LA;16B" unpackers keep the high byte.
#[inline]
pub(super) fn reduce16(mode: Mode, raw: &[u8], out: &mut [u8]) {
    let pairs = raw.chunks_exact(2);
    if mode == Mode::Gray16 {
        for (o, p) in out.iter_mut().zip(pairs) {
            *o = if p[0] != 0 { 255 } else { p[1] };
        }
    } else {
        for (o, p) in out.iter_mut().zip(pairs) {
            *o = p[0];
        }
    }
}

/// Unpack a full raw row into one byte per sample: sub-byte samples unpacked, 16-bit ones
/// reduced ([`reduce16`]), 8-bit ones copied.
pub(super) fn unpack(mode: Mode, raw: &[u8], width: usize, out: &mut [u8]) {
    if mode.is_deep() {
        reduce16(mode, raw, out);
    } else if mode.bits() >= 8 {
        out.copy_from_slice(&raw[..out.len()]);
    } else {
        for (i, o) in out[..width].iter_mut().enumerate() {
            *o = sample(mode, raw, i);
        }
    }
}

/// Inflate the image data row by row (Pillow's ZipDecode), unfilter each row and hand it to
/// `emit(pass, y, row)` (pass is 0 when not interlaced; an error from it ends the decode).
/// Returns the offset just past the chunk where the image ended, from where Pillow reads the
/// trailing chunks.
pub(super) fn inflate_rows(
    data: &[u8],
    idat: usize,
    g: &Geometry,
    interlaced: bool,
    mut emit: impl FnMut(usize, usize, &[u8]) -> Result<()>,
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
            emit(pass, y, &cur[1..=row_len])?;
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
