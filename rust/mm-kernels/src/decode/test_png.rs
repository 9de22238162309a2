//! The PNG builder the decode tests write their PNG inputs with: raw rows (filter 0) deflated
//! by flate2, chunks in the order given.

use std::io::Write;

pub(crate) fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc.sum().to_be_bytes());
    out
}

/// A PNG of raw rows (filter 0) with `extra` chunks before IDAT.
pub(crate) fn png(
    w: u32,
    h: u32,
    bit_depth: u8,
    color_type: u8,
    rows: &[u8],
    extra: &[Vec<u8>],
) -> Vec<u8> {
    let row_len = rows.len() / h as usize;
    let mut raw = Vec::new();
    for r in rows.chunks(row_len.max(1)).take(h as usize) {
        raw.push(0);
        raw.extend_from_slice(r);
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).unwrap();
    let body = z.finish().unwrap();
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[bit_depth, color_type, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(png_chunk(b"IHDR", &ihdr));
    for c in extra {
        out.extend_from_slice(c);
    }
    out.extend(png_chunk(b"IDAT", &body));
    out.extend(png_chunk(b"IEND", b""));
    out
}

/// The PNG header fields of a test image.
#[derive(Clone, Copy)]
pub(crate) struct Ihdr {
    pub w: u32,
    pub h: u32,
    pub bit_depth: u8,
    pub color_type: u8,
}

/// A PNG of the first `given` rows of `rows` (rows of `row_len` bytes, filter 0; the zlib
/// stream ends after them, so later rows are missing), `before` chunks ahead of IDAT and
/// `after` chunks behind it.
pub(crate) fn png_parts(
    hdr: Ihdr,
    rows: &[u8],
    row_len: usize,
    given: usize,
    before: &[Vec<u8>],
    after: &[Vec<u8>],
) -> Vec<u8> {
    let mut raw = Vec::new();
    for r in rows.chunks(row_len.max(1)).take(given) {
        raw.push(0);
        raw.extend_from_slice(r);
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).unwrap();
    let body = z.finish().unwrap();
    let mut ihdr = hdr.w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&hdr.h.to_be_bytes());
    ihdr.extend_from_slice(&[hdr.bit_depth, hdr.color_type, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(png_chunk(b"IHDR", &ihdr));
    for c in before {
        out.extend_from_slice(c);
    }
    out.extend(png_chunk(b"IDAT", &body));
    for c in after {
        out.extend_from_slice(c);
    }
    out.extend(png_chunk(b"IEND", b""));
    out
}
