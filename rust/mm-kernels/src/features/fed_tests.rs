//! `compose_encoded` and `compose_fed` against `compose` of the whole decoded image: the same
//! bits for every writer, encoder, resampler and thread count (the bands then wait on rows
//! still being decoded), and the same error for broken, refused, over-the-limit and cancelled
//! inputs, without hanging.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

use super::*;
use crate::decode::test_jpeg::encode_jpeg;
use crate::decode::test_png::{png_chunk, png_parts, Ihdr};
use crate::decode::{decode_rgb, DecodeOptions};
use crate::feed::RowFeed;
use crate::resize::{PassOrder, Resample};
use crate::test_util::noise;
use turbojpeg_sys as tj;

/// Smooth gradients with noise on top: a JPEG of it has real detail and decodes in batches.
fn photo(w: usize, h: usize, channels: usize, seed: u64) -> Vec<u8> {
    let n = noise(w * h * channels, seed);
    (0..w * h * channels)
        .map(|i| {
            let (p, c) = (i / channels, i % channels);
            let (x, y) = (p % w, p / w);
            ((x * 255 / w + y * 255 / h + c * 60) / 2 + usize::from(n[i] % 32)) as u8
        })
        .collect()
}

fn jpeg(w: usize, h: usize, samp: i32, progressive: bool) -> Vec<u8> {
    let px = photo(w, h, 3, (w * h) as u64);
    encode_jpeg(&px, w, h, tj::TJPF_TJPF_RGB as _, 88, samp, progressive)
}

/// A PNG of `color_type` (2: RGB, 6: RGBA) with `extra` chunks after its image data.
fn png(w: usize, h: usize, color_type: u8, after: &[Vec<u8>]) -> Vec<u8> {
    let channels = if color_type == 6 { 4 } else { 3 };
    let px = photo(w, h, channels, (w + h) as u64);
    let hdr = Ihdr {
        w: w as u32,
        h: h as u32,
        bit_depth: 8,
        color_type,
    };
    png_parts(hdr, &px, w * channels, h, &[], after)
}

/// JPEGs and PNGs that stream (baseline, progressive, 4:2:0, odd sizes, gray; RGB, RGBA, a
/// transparent colour after the image data) and three that do not (CMYK; an EXIF orientation,
/// which is applied to the whole image, in a JPEG and in a chunk after a PNG's image data).
fn corpus() -> Vec<(&'static str, Vec<u8>)> {
    let s444: i32 = tj::TJSAMP_TJSAMP_444 as _;
    let s420: i32 = tj::TJSAMP_TJSAMP_420 as _;
    let gray = encode_jpeg(
        &photo(45, 130, 1, 3),
        45,
        130,
        tj::TJPF_TJPF_GRAY as _,
        90,
        tj::TJSAMP_TJSAMP_GRAY as _,
        false,
    );
    let cmyk = encode_jpeg(
        &photo(37, 90, 4, 4),
        37,
        90,
        tj::TJPF_TJPF_CMYK as _,
        90,
        s444,
        false,
    );
    vec![
        ("baseline 444 96x200", jpeg(96, 200, s444, false)),
        ("baseline 420 61x147", jpeg(61, 147, s420, false)),
        ("progressive 420 80x113", jpeg(80, 113, s420, true)),
        ("1x1", jpeg(1, 1, s444, false)),
        ("gray 45x130", gray),
        ("cmyk 37x90", cmyk),
        (
            "exif 6, 70x100",
            with_orientation(&jpeg(70, 100, s420, false), 6),
        ),
        ("png rgb 90x131", png(90, 131, 2, &[])),
        ("png rgba 64x99", png(64, 99, 6, &[])),
        (
            "png rgb, tRNS after the image",
            png(50, 70, 2, &[png_chunk(b"tRNS", &[0, 0, 0, 9, 0, 200])]),
        ),
        (
            "png, orientation after the image",
            png(50, 70, 2, &[png_chunk(b"eXIf", &exif_6())]),
        ),
    ]
}

/// A little-endian TIFF block whose one IFD entry is Orientation = 6.
fn exif_6() -> Vec<u8> {
    let mut tiff = b"II*\x00\x08\x00\x00\x00\x01\x00".to_vec();
    tiff.extend_from_slice(&[0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]);
    tiff
}

/// `data` with an APP1 EXIF segment stating `orientation`, right after SOI.
fn with_orientation(data: &[u8], orientation: u16) -> Vec<u8> {
    // "Exif\0\0", a little-endian TIFF header, one IFD with the Orientation tag (0x0112).
    let mut tiff = b"II*\x00\x08\x00\x00\x00\x01\x00".to_vec();
    tiff.extend_from_slice(&0x0112u16.to_le_bytes());
    tiff.extend_from_slice(&3u16.to_le_bytes());
    tiff.extend_from_slice(&1u32.to_le_bytes());
    tiff.extend_from_slice(&orientation.to_le_bytes());
    tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    let mut seg = b"Exif\x00\x00".to_vec();
    seg.extend_from_slice(&tiff);
    let mut out = data[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((seg.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&seg);
    out.extend_from_slice(&data[2..]);
    out
}

type Plan = fn(usize, usize) -> Result<Vec<Part>>;

/// A family's plan of an image of any size, and its writer.
fn plans() -> Vec<(&'static str, Plan, Writer)> {
    let p2 = Patching {
        patch_size: 2,
        merge_size: 2,
        temporal_patch_size: 2,
    };
    let p1 = Patching {
        patch_size: 7,
        merge_size: 1,
        temporal_patch_size: 1,
    };
    vec![
        (
            "planes, resized",
            |w, h| Ok(vec![Part::resized(w * 3 / 4 + 1, h * 5 / 4 + 1)]),
            Writer::Planes,
        ),
        (
            "planes, a rectangle as it is",
            |w, h| {
                let r = Rect::new(w / 3, h / 4, w - w / 3, h - h / 4);
                Ok(vec![Part {
                    source: Some(r),
                    ..Part::resized(r.w, r.h)
                }])
            },
            Writer::Planes,
        ),
        (
            "tiles, a canvas and its thumbnail",
            |_, _| Ok(vec![Part::resized(48, 64), Part::resized(16, 16)]),
            Writer::Tiles(16),
        ),
        (
            "tiles, pan and scan crops",
            |w, h| {
                let (hw, th) = ((w / 2).max(1), h / 3);
                Ok(vec![
                    Part::resized(16, 16),
                    Part {
                        source: Some(Rect::new(0, 0, hw, h)),
                        ..Part::resized(16, 32)
                    },
                    Part {
                        source: Some(Rect::new(w - hw, th, hw, h - th)),
                        ..Part::resized(32, 16)
                    },
                ])
            },
            Writer::Tiles(16),
        ),
        (
            "patch rows, resized",
            |w, h| Ok(vec![Part::resized((w / 4).max(1) * 4, (h / 3).max(1) * 4)]),
            Writer::PatchRows(p2),
        ),
        (
            "patch rows, on a canvas",
            |w, h| {
                let r = Rect::new(0, h / 5, w, h - h / 5);
                Ok(vec![Part {
                    source: Some(r),
                    crop: Some(Rect::new(0, 1, 20, 30)),
                    ..Part::on_canvas(20, 31, (28, 42), [0, 200, 9], (7, 5))
                }])
            },
            Writer::PatchRows(p1),
        ),
        (
            "hwc patches, padded",
            |w, h| {
                Ok(vec![Part {
                    pad_to: Some(((w / 5 + 1) * 5, h.div_ceil(5) * 5)),
                    ..Part::resized(w, h)
                }])
            },
            Writer::HwcPatches {
                patch_size: 5,
                pad_to: None,
            },
        ),
        (
            "hwc patches, zero patches after",
            |w, h| Ok(vec![Part::resized(w / 5 * 5, h / 5 * 5)]),
            Writer::HwcPatches {
                patch_size: 5,
                pad_to: Some(4000),
            },
        ),
        (
            "hwc patches, upscaled",
            |w, h| {
                Ok(vec![Part {
                    pad_to: Some(((2 * w / 5 + 1) * 5, (2 * h).div_ceil(5) * 5)),
                    ..Part::resized(2 * w, 2 * h)
                }])
            },
            Writer::HwcPatches {
                patch_size: 5,
                pad_to: None,
            },
        ),
    ]
}

fn table() -> Table {
    Table::new(
        [0.48, 0.46, 0.41],
        [0.27, 0.26, 0.28],
        1.0 / 255.0,
        Arith::Numpy,
    )
    .unwrap()
    .with_pad_sample(-1)
}

/// The two-step path: decode whole, plan, compose.
fn two_step<E: ComposeEncoder>(
    data: &[u8],
    opts: &DecodeOptions,
    plan: Plan,
    recipe: &Recipe,
    enc: &E,
    par: &Par,
) -> Result<Composed<E::Out>> {
    let img = decode_rgb(data, opts)?;
    let parts = plan(img.width, img.height)?;
    compose(img.view(), &parts, recipe, enc, par)
}

fn same<T: PartialEq + std::fmt::Debug>(
    got: Result<Composed<T>>,
    want: &Result<Composed<T>>,
    what: &str,
) {
    match (&got, want) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.shape, b.shape, "{what}");
            assert!(a.data == b.data, "{what}: different bits");
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}"),
        _ => panic!("{what}: {:?} vs {:?}", got.err(), want.as_ref().err()),
    }
}

#[test]
fn every_writer_encoder_resampler_and_pool_size_gives_the_composed_bits() {
    let table = table();
    let bf16 = table.bf16();
    let opts = DecodeOptions::default();
    for (name, data) in corpus() {
        for (plan_name, plan, writer) in plans() {
            for resample in [Resample::PilBicubic, Resample::AtenU8, Resample::AtenF32] {
                let resize = Resize {
                    resample,
                    order: PassOrder::Pillow13,
                };
                let recipe = Recipe { resize, writer };
                let whole = Par::inline();
                let values = two_step(&data, &opts, plan, &recipe, &Values(&table), &whole);
                let halves = two_step(&data, &opts, plan, &recipe, &Bf16Values(&bf16), &whole);
                let codes = two_step(&data, &opts, plan, &recipe, &Codes, &whole);
                for threads in [0, 1, 2, 3, 4] {
                    let par = Par::new(threads);
                    let what = format!("{name}, {plan_name}, {resample:?}, {threads} threads");
                    let got = compose_encoded(&data, &opts, plan, &recipe, &Values(&table), &par);
                    same(got, &values, &what);
                    let got =
                        compose_encoded(&data, &opts, plan, &recipe, &Bf16Values(&bf16), &par);
                    same(got, &halves, &what);
                    let got = compose_encoded(&data, &opts, plan, &recipe, &Codes, &par);
                    same(got, &codes, &what);
                }
            }
        }
    }
}

#[test]
fn broken_refused_and_over_the_limit_images_fail_as_the_two_step_path() {
    let table = table();
    let refuse: Plan = |w, h| {
        Err(KernelError::InvalidArgument(format!(
            "{w}x{h} is refused by design"
        )))
    };
    let misfit: Plan = |_, _| Ok(vec![Part::resized(10, 8)]); // not whole 16-pixel tiles
    let resize = Resize {
        resample: Resample::PilBicubic,
        order: PassOrder::Pillow13,
    };
    let mut plans: Vec<(&str, Plan, Writer)> = plans();
    plans.push(("refused", refuse, Writer::Planes));
    plans.push(("misfit", misfit, Writer::Tiles(16)));
    let small = DecodeOptions {
        max_pixels: 5000,
        ..DecodeOptions::default()
    };
    for (name, data) in corpus().into_iter().take(3) {
        let step = (data.len() / 23).max(1);
        let mut cases: Vec<Vec<u8>> = (0..data.len())
            .step_by(step)
            .map(|n| data[..n].to_vec())
            .collect();
        let mut junk = data.clone();
        let mid = junk.len() * 2 / 3;
        junk[mid..].fill(0xFF);
        cases.push(junk);
        for (plan_name, plan, writer) in &plans {
            let recipe = Recipe {
                resize,
                writer: *writer,
            };
            for case in &cases {
                for opts in [DecodeOptions::default(), small] {
                    let want = two_step(case, &opts, *plan, &recipe, &Codes, &Par::inline());
                    for threads in [1, 2, 4] {
                        let what = format!(
                            "{name} cut to {} bytes, {plan_name}, {threads} threads",
                            case.len()
                        );
                        let got = compose_encoded(
                            case,
                            &opts,
                            *plan,
                            &recipe,
                            &Codes,
                            &Par::new(threads),
                        );
                        same(got, &want, &what);
                    }
                }
            }
            let want = two_step(
                &cases[1],
                &small,
                *plan,
                &recipe,
                &Values(&table),
                &Par::inline(),
            );
            assert!(want.is_err());
        }
    }
}

#[test]
fn a_set_cancel_flag_stops_the_decode_and_the_bands() {
    let data = jpeg(96, 200, tj::TJSAMP_TJSAMP_420 as _, false);
    let recipe = Recipe {
        resize: Resize {
            resample: Resample::PilBicubic,
            order: PassOrder::Pillow13,
        },
        writer: Writer::Planes,
    };
    for threads in [1, 2, 3] {
        let flag = AtomicBool::new(false);
        let par = Par::new(threads).with_cancel(&flag);
        // Set once the header is read, before any row: the decode stops at its first batch.
        let plan = |w: usize, h: usize| {
            flag.store(true, Ordering::Relaxed);
            Ok(vec![Part::resized(w / 2, h / 2)])
        };
        let got = compose_encoded(
            &data,
            &DecodeOptions::default(),
            plan,
            &recipe,
            &Codes,
            &par,
        );
        assert!(
            matches!(got, Err(KernelError::Cancelled)),
            "{threads} threads: {:?}",
            got.map(|c| c.shape)
        );
    }
}

/// Rows published a few at a time by a producer of our own, with the threads let run in
/// between, so bands wait on rows again and again: `compose`'s bits all the same.
#[test]
fn a_slow_producer_gives_the_composed_bits() {
    let (w, h) = (83, 151);
    let pixels = photo(w, h, 3, 5);
    let image = RgbView::new(w, h, &pixels).unwrap();
    let table = table();
    for (plan_name, plan, writer) in plans() {
        let parts = plan(w, h).unwrap();
        let recipe = Recipe {
            resize: Resize {
                resample: Resample::PilLanczos,
                order: PassOrder::Pillow13,
            },
            writer,
        };
        let want = compose(image, &parts, &recipe, &Values(&table), &Par::inline());
        for threads in [2, 3, 4] {
            for batch in [1, 7, 40] {
                let mut feed = RowFeed::new(vec![0u8; w * h * 3], w * 3);
                let produce = |mut rows: crate::feed::RowWriter<'_>| {
                    let mut y = 0;
                    while y < h {
                        let n = batch.min(h - y);
                        let at = (y - rows.published()) * w * 3;
                        rows.unpublished_mut()[at..at + n * w * 3]
                            .write_copy_of_slice(&pixels[y * w * 3..(y + n) * w * 3]);
                        y += n;
                        rows.publish(y);
                        std::thread::yield_now();
                    }
                    Ok(())
                };
                let par = Par::new(threads);
                let got = compose_fed(&mut feed, produce, &parts, &recipe, &Values(&table), &par);
                same(
                    got,
                    &want,
                    &format!("{plan_name}, {threads} threads, batches of {batch}"),
                );
            }
        }
    }
}

/// A producer that fails halfway, or is cancelled halfway: its error, never a hang nor a
/// partial output; and it runs even when the parts are refused before any band starts.
#[test]
fn a_failing_or_cancelled_producer_ends_the_bands() {
    let (w, h) = (40, 120);
    let pixels = photo(w, h, 3, 6);
    let recipe = Recipe {
        resize: Resize {
            resample: Resample::PilBicubic,
            order: PassOrder::Pillow13,
        },
        writer: Writer::Planes,
    };
    let half = |mut rows: crate::feed::RowWriter<'_>| {
        rows.unpublished_mut()[..h / 2 * w * 3].write_copy_of_slice(&pixels[..h / 2 * w * 3]);
        rows.publish(h / 2);
        Err(KernelError::InvalidArgument("the producer gave up".into()))
    };
    for threads in [1, 2, 4] {
        let par = Par::new(threads);
        let mut feed = RowFeed::new(vec![0u8; w * h * 3], w * 3);
        let got = compose_fed(
            &mut feed,
            half,
            &[Part::resized(30, 90)],
            &recipe,
            &Codes,
            &par,
        );
        assert_eq!(
            got.err().map(|e| e.to_string()),
            Some("the producer gave up".to_string()),
        );
        // Refused parts: the producer's error still comes first.
        let mut feed = RowFeed::new(vec![0u8; w * h * 3], w * 3);
        let two = [Part::resized(30, 90), Part::resized(8, 8)];
        let got = compose_fed(&mut feed, half, &two, &recipe, &Codes, &par);
        assert!(got.unwrap_err().to_string().contains("gave up"));
        let flag = AtomicBool::new(false);
        let watched = par.with_cancel(&flag);
        let mut feed = RowFeed::new(vec![0u8; w * h * 3], w * 3);
        let cancel_halfway = |mut rows: crate::feed::RowWriter<'_>| {
            rows.unpublished_mut()[..h / 2 * w * 3].write_copy_of_slice(&pixels[..h / 2 * w * 3]);
            rows.publish(h / 2);
            flag.store(true, Ordering::Relaxed);
            watched.check()
        };
        let parts = [Part::resized(30, 90)];
        let got = compose_fed(&mut feed, cancel_halfway, &parts, &recipe, &Codes, &watched);
        assert!(
            matches!(got, Err(KernelError::Cancelled)),
            "{threads} threads"
        );
    }
}
