//! End-to-end checks of `decode_rgb` / `image_dimensions` on files built here (libjpeg-turbo and
//! libwebp encode the JPEG / WebP ones): limits refused before decoding, bad input rejected
//! with typed errors, never a panic. Pixel parity with Pillow is tested from Python.

use super::test_jpeg::encode_jpeg;
use super::test_png::{png, png_chunk};
use super::*;
use crate::error::KernelError;

fn opts() -> DecodeOptions {
    DecodeOptions::default()
}

/// A deterministic byte generator (xorshift), so "random" inputs repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// An RGB test pattern.
fn pattern(w: usize, h: usize) -> Vec<u8> {
    let mut px = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            px.extend_from_slice(&[
                (x * 255 / w.max(1)) as u8,
                (y * 255 / h.max(1)) as u8,
                ((x + y) % 256) as u8,
            ]);
        }
    }
    px
}

fn jpeg(w: usize, h: usize) -> Vec<u8> {
    use turbojpeg_sys as tj;
    let (rgb, s444) = (tj::TJPF_TJPF_RGB as _, tj::TJSAMP_TJSAMP_444 as _);
    encode_jpeg(&pattern(w, h), w, h, rgb, 90, s444, false)
}

fn webp_lossless(w: usize, h: usize) -> Vec<u8> {
    let px = pattern(w, h);
    let mut out: *mut u8 = std::ptr::null_mut();
    // SAFETY: lossless encode of a valid RGB buffer; the output is freed below.
    unsafe {
        let n =
            libwebp_sys::WebPEncodeLosslessRGB(px.as_ptr(), w as _, h as _, (w * 3) as _, &mut out);
        assert!(n > 0);
        let v = std::slice::from_raw_parts(out, n).to_vec();
        libwebp_sys::WebPFree(out.cast());
        v
    }
}

fn gif(w: u16, h: u16, indices: &[u8], palette: &[[u8; 3]; 4]) -> Vec<u8> {
    // 2-bit LZW without table growth: a clear code before every 2 literals.
    let (clear, end, size) = (4u32, 5u32, 3u32);
    let mut codes = Vec::new();
    for (i, &v) in indices.iter().enumerate() {
        if i % 2 == 0 {
            codes.push(clear);
        }
        codes.push(u32::from(v));
    }
    codes.push(end);
    let (mut acc, mut nbits, mut bytes) = (0u32, 0u32, Vec::new());
    for c in codes {
        acc |= c << nbits;
        nbits += size;
        while nbits >= 8 {
            bytes.push(acc as u8);
            acc >>= 8;
            nbits -= 8;
        }
    }
    if nbits > 0 {
        bytes.push(acc as u8);
    }
    let mut out = b"GIF89a".to_vec();
    out.extend_from_slice(&w.to_le_bytes());
    out.extend_from_slice(&h.to_le_bytes());
    out.extend_from_slice(&[0x81, 0, 0]);
    for c in palette {
        out.extend_from_slice(c);
    }
    out.extend_from_slice(b",\x00\x00\x00\x00");
    out.extend_from_slice(&w.to_le_bytes());
    out.extend_from_slice(&h.to_le_bytes());
    out.extend_from_slice(&[0, 2]);
    for block in bytes.chunks(255) {
        out.push(block.len() as u8);
        out.extend_from_slice(block);
    }
    out.extend_from_slice(b"\x00;");
    out
}

fn bmp24(w: u32, h: u32, rgb: &[u8]) -> Vec<u8> {
    let stride = (w as usize * 3).div_ceil(4) * 4;
    let mut data = Vec::new();
    for y in (0..h as usize).rev() {
        let row = &rgb[y * w as usize * 3..(y + 1) * w as usize * 3];
        for p in row.chunks(3) {
            data.extend_from_slice(&[p[2], p[1], p[0]]);
        }
        data.resize(data.len() + stride - w as usize * 3, 0);
    }
    let mut out = b"BM".to_vec();
    out.extend_from_slice(&(54 + data.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&54u32.to_le_bytes());
    out.extend_from_slice(&40u32.to_le_bytes());
    out.extend_from_slice(&w.to_le_bytes());
    out.extend_from_slice(&h.to_le_bytes());
    out.extend_from_slice(&[1, 0, 24, 0]);
    out.extend_from_slice(&[0; 24]);
    out.extend_from_slice(&data);
    out
}

fn samples() -> Vec<(&'static str, Vec<u8>)> {
    let px = pattern(23, 17);
    vec![
        ("jpeg", jpeg(23, 17)),
        ("png", png(23, 17, 8, 2, &px, &[])),
        ("webp", webp_lossless(23, 17)),
        (
            "gif",
            gif(
                5,
                3,
                &[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2],
                &[[0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255]],
            ),
        ),
        ("bmp", bmp24(23, 17, &px)),
    ]
}

#[test]
fn lossless_formats_decode_exactly() {
    let px = pattern(23, 17);
    for (name, data) in samples() {
        let img = decode_rgb(&data, &opts()).unwrap_or_else(|e| panic!("{name}: {e}"));
        match name {
            "png" | "webp" | "bmp" => assert_eq!(img.data, px, "{name}"),
            "jpeg" => {
                let worst = img.data.iter().zip(&px).map(|(a, b)| a.abs_diff(*b)).max();
                assert!(worst.unwrap_or(0) < 12, "{name}: {worst:?}");
            }
            _ => {
                let want: Vec<u8> = [[0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255]]
                    .iter()
                    .cycle()
                    .take(15)
                    .flatten()
                    .copied()
                    .collect();
                assert_eq!((img.width, img.height), (5, 3));
                assert_eq!(img.data, want);
            }
        }
        let dims = image_dimensions(&data, true).unwrap();
        assert_eq!(dims, (img.width as u32, img.height as u32), "{name}");
    }
}

#[test]
fn every_truncation_is_an_error_or_a_full_image() {
    for (name, data) in samples() {
        for cut in 0..data.len() {
            match decode_rgb(&data[..cut], &opts()) {
                Ok(img) => assert_eq!(
                    img.data.len(),
                    img.width * img.height * 3,
                    "{name} at {cut}"
                ),
                Err(KernelError::Decode { .. } | KernelError::UnsupportedFormat(_)) => {}
                Err(e) => panic!("{name} cut at {cut}: unexpected {e}"),
            }
            let _ = image_dimensions(&data[..cut], true);
        }
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (_, data) in samples() {
        for _ in 0..300 {
            let mut d = data.clone();
            for _ in 0..1 + rng.next() % 4 {
                let i = (rng.next() as usize) % d.len();
                d[i] = rng.next() as u8;
            }
            if let Ok(img) = decode_rgb(
                &d,
                &DecodeOptions {
                    max_pixels: 1 << 22,
                    ..opts()
                },
            ) {
                assert_eq!(img.data.len(), img.width * img.height * 3);
            }
            let _ = image_dimensions(&d, true);
        }
    }
}

#[test]
fn random_and_empty_input_name_the_problem() {
    let msg = |d: &[u8]| decode_rgb(d, &opts()).unwrap_err().to_string();
    assert!(msg(b"").contains("empty"));
    assert!(msg(&Rng(7).bytes(1000)).contains("unknown format"));
    assert!(msg(b"II*\x00\x08\x00\x00\x00").contains("TIFF"));
    for magic in [
        &b"\xff\xd8\xff"[..],
        b"\x89PNG\r\n\x1a\n",
        b"GIF89a",
        b"BM",
        b"RIFF\x10\x00\x00\x00WEBPVP8 ",
    ] {
        let mut d = magic.to_vec();
        d.extend(Rng(3).bytes(200));
        assert!(decode_rgb(&d, &opts()).is_err());
        assert!(decode_rgb(magic, &opts()).is_err());
    }
}

#[test]
fn decompression_bomb_is_refused_before_decoding() {
    // 20000 x 20000 declared, one row of data: refused from the header, no 1.2 GB buffer.
    let data = png(20000, 20000, 8, 0, &vec![0u8; 20000], &[]);
    let err = decode_rgb(&data, &opts()).unwrap_err();
    assert!(matches!(
        err,
        KernelError::LimitExceeded {
            limit: "max_image_pixels",
            ..
        }
    ));
    let msg = err.to_string();
    assert!(
        msg.contains("20000x20000") && msg.contains("178956970"),
        "{msg}"
    );
    assert_eq!(image_dimensions(&data, true).unwrap(), (20000, 20000));
    // Under the pixel limit but over the side limit.
    let wide = png(70000, 1, 8, 0, &vec![0u8; 70000], &[]);
    assert!(matches!(
        decode_rgb(&wide, &opts()),
        Err(KernelError::LimitExceeded {
            limit: "max_image_side",
            max: 65535,
            ..
        })
    ));
}

#[test]
fn limits_apply_to_every_format() {
    for (name, data) in samples() {
        let tight = DecodeOptions {
            max_pixels: 14,
            ..opts()
        };
        assert!(
            matches!(
                decode_rgb(&data, &tight),
                Err(KernelError::LimitExceeded {
                    limit: "max_image_pixels",
                    ..
                })
            ),
            "{name}"
        );
        let narrow = DecodeOptions {
            max_side: 4,
            ..opts()
        };
        assert!(
            matches!(
                decode_rgb(&data, &narrow),
                Err(KernelError::LimitExceeded {
                    limit: "max_image_side",
                    ..
                })
            ),
            "{name}"
        );
    }
}

fn be16(samples: &[u16]) -> Vec<u8> {
    samples.iter().flat_map(|v| v.to_be_bytes()).collect()
}

fn drop_alpha() -> DecodeOptions {
    DecodeOptions {
        alpha: Alpha::Drop,
        ..opts()
    }
}

/// Pillow 13's reductions, checked against it from Python (tests/test_decode_deep.py): "I;16"
/// gray clamps to 255, 16-bit RGB / RGBA / gray + alpha keep the high byte.
#[test]
fn sixteen_bit_png_reduces_as_pillow_does() {
    let gray = [0u16, 1, 255, 256, 257, 65535];
    let data = png(6, 1, 16, 0, &be16(&gray), &[]);
    let img = decode_rgb(&data, &opts()).unwrap();
    let want: Vec<u8> = [0u8, 1, 255, 255, 255, 255]
        .iter()
        .flat_map(|&v| [v; 3])
        .collect();
    assert_eq!(img.data, want);
    assert_eq!(image_dimensions(&data, true).unwrap(), (6, 1));

    let rgb = [0x1234u16, 0x00ff, 0xff00, 0xffff, 0x0100, 0x0001];
    let img = decode_rgb(&png(2, 1, 16, 2, &be16(&rgb), &[]), &opts()).unwrap();
    assert_eq!(img.data, vec![0x12, 0x00, 0xff, 0xff, 0x01, 0x00]);

    // RGBA: alpha 0 is white, 0xff.. opaque; dropped alpha keeps the high bytes.
    let rgba = [
        0x1234u16, 0x5678, 0x9abc, 0x00ff, 0x1234, 0x5678, 0x9abc, 0xff00,
    ];
    let data = png(2, 1, 16, 6, &be16(&rgba), &[]);
    assert_eq!(
        decode_rgb(&data, &opts()).unwrap().data,
        vec![255, 255, 255, 0x12, 0x56, 0x9a]
    );
    assert_eq!(
        decode_rgb(&data, &drop_alpha()).unwrap().data,
        vec![0x12, 0x56, 0x9a, 0x12, 0x56, 0x9a]
    );

    // Gray + alpha is Pillow's RGBA: gray replicated, composited with the alpha's high byte.
    let la = [0x8000u16, 0x0000, 0x40ff, 0xffff];
    let data = png(2, 1, 16, 4, &be16(&la), &[]);
    assert_eq!(
        decode_rgb(&data, &opts()).unwrap().data,
        vec![255, 255, 255, 0x40, 0x40, 0x40]
    );
    assert_eq!(
        decode_rgb(&data, &drop_alpha()).unwrap().data,
        vec![0x80, 0x80, 0x80, 0x40, 0x40, 0x40]
    );
}

/// tRNS on 16-bit gray / RGB: Pillow compares the low byte of the stored value with the pixel
/// as converted to 8 bits, so 256 makes 0 transparent and 65535 every clamped value.
#[test]
fn sixteen_bit_transparency_matches_the_low_byte() {
    let gray = be16(&[0, 1, 255, 256, 65535]);
    let cases: [(u16, [u8; 5]); 3] = [
        (256, [255, 1, 255, 255, 255]),
        (1, [0, 255, 255, 255, 255]),
        (65535, [0, 1, 255, 255, 255]),
    ];
    for (t, want) in cases {
        let data = png(5, 1, 16, 0, &gray, &[png_chunk(b"tRNS", &t.to_be_bytes())]);
        let img = decode_rgb(&data, &opts()).unwrap();
        let want: Vec<u8> = want.iter().flat_map(|&v| [v; 3]).collect();
        assert_eq!(img.data, want, "tRNS {t}");
        let dropped = decode_rgb(&data, &drop_alpha()).unwrap();
        let clamped: Vec<u8> = [0u8, 1, 255, 255, 255]
            .iter()
            .flat_map(|&v| [v; 3])
            .collect();
        assert_eq!(dropped.data, clamped, "tRNS {t}, dropped");
    }
    // The second pixel's high bytes equal the colour's low bytes: that one is transparent.
    let rgb = be16(&[0x1234, 0x5678, 0x9abc, 0x3412, 0x7856, 0xbc9a]);
    let trns = png_chunk(b"tRNS", &be16(&[0x1234, 0x5678, 0x9abc]));
    let img = decode_rgb(&png(2, 1, 16, 2, &rgb, &[trns]), &opts()).unwrap();
    assert_eq!(img.data, vec![0x12, 0x56, 0x9a, 255, 255, 255]);
}

#[test]
fn sixteen_bit_png_limits_come_from_the_header() {
    // 20000x20000 16-bit RGB declared, one row of data: refused on the limit, not truncation.
    let data = png(20000, 20000, 16, 2, &vec![0u8; 120_000], &[]);
    assert!(matches!(
        decode_rgb(&data, &opts()),
        Err(KernelError::LimitExceeded {
            limit: "max_image_pixels",
            ..
        })
    ));
    assert_eq!(image_dimensions(&data, false).unwrap(), (20000, 20000));
}

#[test]
fn png_layout_without_a_pillow_mode_is_named() {
    let data = png(2, 2, 16, 3, &[0u8; 8], &[]);
    let err = decode_rgb(&data, &opts()).unwrap_err();
    assert!(matches!(err, KernelError::Decode { format: "PNG", .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("bit depth 16") && msg.contains("colour type 3"),
        "{msg}"
    );
}

#[test]
fn png_exif_orientation_turns_image_and_probe() {
    // IFD0 with Orientation = 6 (rotate 90 clockwise), little endian.
    let mut tiff = b"II*\x00\x08\x00\x00\x00\x01\x00".to_vec();
    tiff.extend_from_slice(&[0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]);
    let px = pattern(3, 2);
    let data = png(3, 2, 8, 2, &px, &[png_chunk(b"eXIf", &tiff)]);
    assert_eq!(image_dimensions(&data, true).unwrap(), (2, 3));
    assert_eq!(image_dimensions(&data, false).unwrap(), (3, 2));
    let img = decode_rgb(&data, &opts()).unwrap();
    assert_eq!((img.width, img.height), (2, 3));
    // Clockwise: the source's bottom-left pixel becomes the top-left.
    assert_eq!(&img.data[..3], &px[9..12]);
    let plain = decode_rgb(
        &data,
        &DecodeOptions {
            exif_orientation: false,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(plain.data, px);
}

#[test]
fn alpha_modes_on_rgba_png() {
    let rows = [10u8, 20, 30, 0, 10, 20, 30, 255, 200, 100, 0, 128];
    let data = png(3, 1, 8, 6, &rows, &[]);
    let white = decode_rgb(&data, &opts()).unwrap();
    assert_eq!(white.data, vec![255, 255, 255, 10, 20, 30, 227, 177, 127]);
    let drop = decode_rgb(
        &data,
        &DecodeOptions {
            alpha: Alpha::Drop,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(drop.data, vec![10, 20, 30, 10, 20, 30, 200, 100, 0]);
}

/// Found by the `decode_rgb` fuzzer: a PNG whose image data is complete decodes (Pillow never
/// reads past the IDAT that holds the last row, and its `load_end` stops at an unreadable
/// chunk header), so the header probe must not refuse it either.
#[test]
fn png_probe_accepts_what_decode_accepts_after_the_image_data() {
    let rows = pattern(8, 6);
    let whole = png(8, 6, 8, 2, &rows, &[]);
    let iend_at = whole.len() - 12;
    let mut broken_type = whole.clone();
    broken_type[iend_at + 6..iend_at + 8].copy_from_slice(b"\xb2\xb3");
    let cut_header = whole[..iend_at + 3].to_vec();
    for (name, data) in [
        ("broken chunk type", broken_type),
        ("cut chunk header", cut_header),
    ] {
        let img = decode_rgb(&data, &opts()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(img.data, rows, "{name}");
        let dims = image_dimensions(&data, true).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(dims, (8, 6), "{name}");
    }
}
