//! `decode_rgb_rows` against `decode_rgb`: the same pixels (or the same error) for streamed and
//! whole-image JPEGs (baseline, progressive, 4:2:0, grayscale, CMYK, odd sizes) and PNGs (every
//! colour type, 16-bit, transparency before and after the image data, a zlib stream that ends
//! early, an orientation after the image data), cut at many points, read by 1, 2 and 4 threads
//! through `Par::pipeline`, under both alpha modes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::test_jpeg::encode_jpeg;
use super::test_png::{png_chunk, png_parts, Ihdr};
use super::*;
use crate::par::Par;

fn pattern(w: usize, h: usize, channels: usize) -> Vec<u8> {
    (0..w * h * channels)
        .map(|i| ((i / channels) * 37 + (i % channels) * 91 + (i / (w * channels)) * 13) as u8)
        .collect()
}

/// A TurboJPEG encoding of a pattern in pixel format `pf` with subsampling `samp`.
fn encode(w: usize, h: usize, pf: i32, channels: usize, samp: i32, progressive: bool) -> Vec<u8> {
    encode_jpeg(&pattern(w, h, channels), w, h, pf, 85, samp, progressive)
}

/// PNGs that stream, but for the last (an orientation in a chunk after the image data).
fn png_corpus() -> Vec<(&'static str, Vec<u8>)> {
    let (w, h) = (37usize, 53usize);
    let hdr = |bit_depth, color_type| Ihdr {
        w: w as u32,
        h: h as u32,
        bit_depth,
        color_type,
    };
    let rgb = pattern(w, h, 3);
    let rgba = pattern(w, h, 4);
    let gray16 = pattern(w, h, 2);
    let indices: Vec<u8> = pattern(w, h, 1).iter().map(|v| v % 4).collect();
    let plte = png_chunk(b"PLTE", &[0, 0, 0, 250, 10, 10, 10, 250, 10, 10, 10, 250]);
    let alphas = png_chunk(b"tRNS", &[255, 0, 128]);
    // The colour of pixel (0, 0) is the transparent one (16-bit samples: its low bytes match).
    let key = png_chunk(b"tRNS", &[0, rgb[0], 0, rgb[1], 0, rgb[2]]);
    let gray_key = png_chunk(b"tRNS", &[0, gray16[1]]);
    let mut tiff = b"II*\x00\x08\x00\x00\x00\x01\x00".to_vec();
    tiff.extend_from_slice(&[0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]);
    let exif = png_chunk(b"eXIf", &tiff);
    vec![
        ("png rgb", png_parts(hdr(8, 2), &rgb, w * 3, h, &[], &[])),
        ("png rgba", png_parts(hdr(8, 6), &rgba, w * 4, h, &[], &[])),
        (
            "png palette, tRNS",
            png_parts(
                hdr(8, 3),
                &indices,
                w,
                h,
                &[plte.clone(), alphas.clone()],
                &[],
            ),
        ),
        (
            "png gray16, tRNS",
            png_parts(hdr(16, 0), &gray16, w * 2, h, &[gray_key], &[]),
        ),
        (
            "png rgb, tRNS",
            png_parts(hdr(8, 2), &rgb, w * 3, h, std::slice::from_ref(&key), &[]),
        ),
        (
            "png rgb, tRNS after the image",
            png_parts(hdr(8, 2), &rgb, w * 3, h, &[], &[key]),
        ),
        (
            "png palette, tRNS after the image",
            png_parts(hdr(8, 3), &indices, w, h, &[plte], &[alphas]),
        ),
        (
            "png rgb, zlib ends at row 20",
            png_parts(hdr(8, 2), &rgb, w * 3, 20, &[], &[]),
        ),
        (
            "png, orientation after the image",
            png_parts(hdr(8, 2), &rgb, w * 3, h, &[], &[exif]),
        ),
    ]
}

fn corpus() -> Vec<(&'static str, Vec<u8>)> {
    use turbojpeg_sys as tj;
    let rgb = tj::TJPF_TJPF_RGB as _;
    let s444 = tj::TJSAMP_TJSAMP_444 as _;
    let s420 = tj::TJSAMP_TJSAMP_420 as _;
    vec![
        ("baseline 444", encode(61, 47, rgb, 3, s444, false)),
        ("baseline 420 odd", encode(33, 71, rgb, 3, s420, false)),
        ("progressive 420", encode(57, 40, rgb, 3, s420, true)),
        ("1x1", encode(1, 1, rgb, 3, s444, false)),
        (
            "gray",
            encode(
                29,
                35,
                tj::TJPF_TJPF_GRAY as _,
                1,
                tj::TJSAMP_TJSAMP_GRAY as _,
                false,
            ),
        ),
        (
            "cmyk",
            encode(19, 23, tj::TJPF_TJPF_CMYK as _, 4, s444, false),
        ),
    ]
    .into_iter()
    .chain(png_corpus())
    .collect()
}

/// Decode through the feed with `threads`, consumers copying rows out one at a time.
fn streamed(data: &[u8], opts: &DecodeOptions, threads: usize) -> Result<RgbImage> {
    let (mut feed, decode) = decode_rgb_rows(data, opts)?;
    let (w, h) = (decode.width(), decode.height());
    let out = Mutex::new(vec![0u8; w * h * 3]);
    let next = AtomicUsize::new(0);
    let copied = AtomicUsize::new(0);
    let (writer, reader) = feed.split();
    let par = Par::new(threads);
    let res = par.pipeline(
        move || decode.run(writer, &par),
        || loop {
            let y = next.fetch_add(1, Ordering::Relaxed);
            if y >= h {
                break;
            }
            let Some(rows) = reader.wait(y + 1) else {
                break;
            };
            let mut out = out.lock().unwrap();
            out[y * w * 3..(y + 1) * w * 3].copy_from_slice(&rows[y * w * 3..]);
            copied.fetch_add(1, Ordering::Relaxed);
        },
    );
    res?;
    assert_eq!(copied.load(Ordering::Relaxed), h, "every row once");
    RgbImage::new(w, h, out.into_inner().unwrap())
}

/// Every option set the spec can give (alpha white or drop, orientation on or off).
fn all_options() -> Vec<DecodeOptions> {
    let mut out = Vec::new();
    for alpha in [Alpha::White, Alpha::Drop] {
        for exif_orientation in [true, false] {
            out.push(DecodeOptions {
                alpha,
                exif_orientation,
                ..DecodeOptions::default()
            });
        }
    }
    out
}

#[test]
fn which_images_stream() {
    for (name, data) in corpus() {
        let streams = !matches!(name, "cmyk" | "png, orientation after the image");
        let size = stream_size(&data, &DecodeOptions::default()).unwrap();
        assert_eq!(size.is_some(), streams, "{name}");
        let (_, decode) = decode_rgb_rows(&data, &DecodeOptions::default()).unwrap();
        assert_eq!(decode.streams(), streams, "{name}");
    }
}

#[test]
fn streamed_rows_equal_the_whole_image_decode() {
    for (name, data) in corpus() {
        for opts in all_options() {
            let want = decode_rgb(&data, &opts).unwrap();
            for threads in [1, 2, 4] {
                let got = streamed(&data, &opts, threads).unwrap();
                assert_eq!(got, want, "{name}, {threads} threads");
            }
        }
    }
}

#[test]
fn truncated_or_corrupt_streams_fail_like_the_whole_image_decode() {
    for (name, data) in corpus() {
        let step = (data.len() / 40).max(1);
        let mut cases: Vec<Vec<u8>> = (0..data.len())
            .step_by(step)
            .map(|n| data[..n].to_vec())
            .collect();
        // Scan data overwritten with junk halfway through.
        let mut junk = data.clone();
        let mid = junk.len() / 2;
        junk[mid..].fill(0xFF);
        cases.push(junk);
        for (case, opts) in cases
            .iter()
            .flat_map(|c| all_options().into_iter().map(move |o| (c, o)))
        {
            let want = decode_rgb(case, &opts);
            for threads in [1, 2, 4] {
                let got = streamed(case, &opts, threads);
                match (&want, &got) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{name} ({} bytes)", case.len()),
                    (Err(a), Err(b)) => {
                        assert_eq!(
                            a.to_string(),
                            b.to_string(),
                            "{name} ({} bytes)",
                            case.len()
                        )
                    }
                    _ => panic!("{name} ({} bytes): {want:?} vs {got:?}", case.len()),
                }
            }
        }
    }
}

fn opts_default() -> DecodeOptions {
    DecodeOptions::default()
}

#[test]
fn other_formats_come_back_as_a_complete_feed() {
    // A 1x1 24-bit BMP.
    let mut b = Vec::new();
    b.extend_from_slice(b"BM");
    b.extend_from_slice(&(54u32 + 4).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&54u32.to_le_bytes());
    b.extend_from_slice(&40u32.to_le_bytes());
    b.extend_from_slice(&1i32.to_le_bytes());
    b.extend_from_slice(&1i32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&24u16.to_le_bytes());
    b.extend_from_slice(&[0u8; 24]);
    b.extend_from_slice(&[10, 20, 30, 0]);
    let got = streamed(&b, &opts_default(), 2).unwrap();
    assert_eq!(got, decode_rgb(&b, &opts_default()).unwrap());
    assert!(streamed(b"nope", &opts_default(), 2).is_err());
}
