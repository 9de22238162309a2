//! Every writer against a straightforward statement of its layout (resize whole with
//! `resize_rgb`, crop, pad, then index), for each encoder, resampler, pass order and thread
//! count; and the compact form through the table equal to the full form.

use super::*;
use crate::image::RgbImage;
use crate::resize::{resize_rgb, PassOrder, Resample};
use crate::test_util::noise;

/// The part's pixels as `(kept width, kept height, extent, sample(x, y, c))`, the slow way.
struct Reference {
    kept: (usize, usize),
    extent: (usize, usize),
    img: Option<RgbImage>,
    crop: Rect,
    fill: Option<Fill>,
}

impl Reference {
    fn new(src: RgbView<'_>, part: &Part, resize: Resize) -> Self {
        let r = part
            .source
            .unwrap_or(Rect::new(0, 0, src.width, src.height));
        let mut cut = Vec::new();
        for y in r.y..r.y + r.h {
            cut.extend_from_slice(&src.data[(y * src.width + r.x) * 3..][..r.w * 3]);
        }
        let view = RgbView::new(r.w, r.h, &cut).unwrap();
        let (w, h) = part.size;
        let img = (w > 0 && h > 0).then(|| {
            resize_rgb(view, w, h, resize.resample, resize.order, &Par::inline()).unwrap()
        });
        let crop = part.crop.unwrap_or(Rect::new(0, 0, w, h));
        Self {
            kept: (crop.w, crop.h),
            extent: part.extent(),
            img,
            crop,
            fill: part.fill,
        }
    }

    /// Sample `c` at `(x, y)` of the extent; `None` in the padding (a canvas has none: its
    /// colour is a sample).
    fn at(&self, x: usize, y: usize, c: usize) -> Option<u8> {
        let (ax, ay) = self.fill.map_or((0, 0), |f| f.at);
        let inside = (ax..ax + self.kept.0).contains(&x) && (ay..ay + self.kept.1).contains(&y);
        if !inside {
            return self.fill.map(|f| f.color[c]);
        }
        let img = self.img.as_ref()?;
        let (xx, yy) = (x - ax + self.crop.x, y - ay + self.crop.y);
        Some(img.data[(yy * img.width + xx) * 3 + c])
    }
}

fn value(t: &Table, v: Option<u8>, c: usize) -> f32 {
    v.map_or_else(
        || t.pad().unwrap_or([0.0; 3])[c],
        |v| t.values()[c][usize::from(v)],
    )
}

/// `(x, y, c, frame)` of every output element, in order, for a writer over references.
fn elements(refs: &[Reference], writer: Writer) -> Vec<(usize, usize, usize, usize)> {
    let mut out = Vec::new();
    match writer {
        Writer::Planes => {
            let (w, h) = refs[0].extent;
            for c in 0..3 {
                for y in 0..h {
                    for x in 0..w {
                        out.push((0, x, y, c));
                    }
                }
            }
        }
        Writer::Tiles(t) => {
            for (p, r) in refs.iter().enumerate() {
                let (w, h) = r.extent;
                for tr in 0..h / t {
                    for tc in 0..w / t {
                        for c in 0..3 {
                            for y in 0..t {
                                for x in 0..t {
                                    out.push((p, tc * t + x, tr * t + y, c));
                                }
                            }
                        }
                    }
                }
            }
        }
        Writer::PatchRows(p) => {
            let (w, h) = refs[0].extent;
            let (ps, m, tps) = (p.patch_size, p.merge_size, p.temporal_patch_size);
            let (gh, gw) = (h / ps, w / ps);
            for r in 0..gh * gw {
                let (mw, mh) = (r % m, (r / m) % m);
                let b = r / (m * m);
                let (bh, bw) = (b / (gw / m), b % (gw / m));
                let (pr, pc) = (bh * m + mh, bw * m + mw);
                for c in 0..3 {
                    for _ in 0..tps {
                        for y in 0..ps {
                            for x in 0..ps {
                                out.push((0, pc * ps + x, pr * ps + y, c));
                            }
                        }
                    }
                }
            }
        }
        Writer::HwcPatches { patch_size: ps, .. } => {
            let (w, h) = refs[0].extent;
            for pr in 0..h / ps {
                for pc in 0..w / ps {
                    for y in 0..ps {
                        for x in 0..ps {
                            for c in 0..3 {
                                out.push((0, pc * ps + x, pr * ps + y, c));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The compact form of the patch rows holds each frame once.
fn compact_elements(refs: &[Reference], writer: Writer) -> Vec<(usize, usize, usize, usize)> {
    match writer {
        Writer::PatchRows(p) => elements(
            refs,
            Writer::PatchRows(Patching {
                temporal_patch_size: 1,
                ..p
            }),
        ),
        other => elements(refs, other),
    }
}

fn check(src: RgbView<'_>, parts: &[Part], writer: Writer) {
    let table = Table::new(
        [0.48, 0.46, 0.41],
        [0.27, 0.26, 0.28],
        1.0 / 255.0,
        Arith::Numpy,
    )
    .unwrap()
    .with_pad_sample(-1);
    let bf16 = table.bf16();
    for resample in [Resample::PilBicubic, Resample::AtenU8, Resample::PilLanczos] {
        for order in [PassOrder::Pillow13, PassOrder::Pillow12] {
            let resize = Resize { resample, order };
            let recipe = Recipe { resize, writer };
            let refs: Vec<Reference> = parts
                .iter()
                .map(|p| Reference::new(src, p, resize))
                .collect();
            let mut want: Vec<f32> = elements(&refs, writer)
                .into_iter()
                .map(|(p, x, y, c)| value(&table, refs[p].at(x, y, c), c))
                .collect();
            let mut want_codes: Vec<u8> = compact_elements(&refs, writer)
                .into_iter()
                .map(|(p, x, y, c)| refs[p].at(x, y, c).unwrap_or(0))
                .collect();
            if let Writer::HwcPatches {
                patch_size: ps,
                pad_to: Some(n),
            } = writer
            {
                // Zero patches after the image's.
                want.resize(n * ps * ps * 3, 0.0);
                want_codes.resize(n * ps * ps * 3, 0);
            }
            for threads in [1, 2, 3, 7] {
                let par = Par::new(threads);
                let got = compose(src, parts, &recipe, &Values(&table), &par).unwrap();
                assert_eq!(got.shape.iter().product::<usize>(), got.data.len());
                assert!(
                    got.data == want,
                    "{writer:?} {resample:?} {order:?} t{threads}"
                );
                let got16 = compose(src, parts, &recipe, &Bf16Values(&bf16), &par).unwrap();
                let want16: Vec<u16> = want.iter().map(|&v| bf16_rne(v)).collect();
                assert_eq!(got16.data, want16, "bf16 {writer:?}");
                let codes = compose(src, parts, &recipe, &Codes, &par).unwrap();
                assert_eq!(
                    codes.data, want_codes,
                    "codes {writer:?} {resample:?} t{threads}"
                );
            }
        }
    }
}

#[test]
fn planes_of_a_resized_cropped_padded_part() {
    let (w, h) = (41, 29);
    let data = noise(w * h * 3, 1);
    let src = RgbView::new(w, h, &data).unwrap();
    check(src, &[Part::resized(32, 48)], Writer::Planes);
    check(src, &[Part::resized(41, 29)], Writer::Planes);
    let clip = Part {
        crop: Some(Rect::new(4, 0, 21, 21)),
        ..Part::resized(30, 21)
    };
    check(src, &[clip], Writer::Planes);
    let padded = Part {
        pad_to: Some((35, 40)),
        ..Part::resized(33, 17)
    };
    check(src, &[padded], Writer::Planes);
}

#[test]
fn tiles_of_a_canvas_a_thumbnail_and_crops() {
    let (w, h) = (53, 37);
    let data = noise(w * h * 3, 2);
    let src = RgbView::new(w, h, &data).unwrap();
    // InternVL: a 3x2 canvas of 12-pixel tiles, then the thumbnail.
    check(
        src,
        &[Part::resized(36, 24), Part::resized(12, 12)],
        Writer::Tiles(12),
    );
    // Gemma 3 with pan and scan: the whole image and two crops, each one tile.
    let crops = [
        Part::resized(16, 16),
        Part {
            source: Some(Rect::new(0, 0, 27, 37)),
            ..Part::resized(16, 16)
        },
        Part {
            source: Some(Rect::new(27, 0, 26, 37)),
            ..Part::resized(16, 16)
        },
    ];
    check(src, &crops, Writer::Tiles(16));
}

#[test]
fn patch_rows_of_every_shipped_geometry() {
    for (k, &(w, h)) in [(40, 36), (13, 57), (90, 20), (41, 41)].iter().enumerate() {
        let data = noise(w * h * 3, k as u64);
        let src = RgbView::new(w, h, &data).unwrap();
        let p = Patching {
            patch_size: 2,
            merge_size: 2,
            temporal_patch_size: 2,
        };
        for (ow, oh) in [(40, 36), (40, 52), (24, 36), (8, 4), (w / 4 * 4, h / 4 * 4)] {
            check(src, &[Part::resized(ow, oh)], Writer::PatchRows(p));
        }
    }
    // The patch sizes with their own code paths (Qwen2/2.5: 14, Qwen3: 16).
    for ps in [14, 16] {
        let p = Patching {
            patch_size: ps,
            merge_size: 2,
            temporal_patch_size: 2,
        };
        let data = noise(75 * 61 * 3, ps as u64);
        let src = RgbView::new(75, 61, &data).unwrap();
        for (ow, oh) in [(4 * ps, 2 * ps), (6 * ps, 4 * ps)] {
            check(src, &[Part::resized(ow, oh)], Writer::PatchRows(p));
        }
    }
}

/// `PIL.ImageOps.pad`: the resized image at an offset on a canvas of one colour, through
/// every writer that takes one part (the canvas samples are pixels, so none pads), and a
/// canvas whose image rounds to nothing.
#[test]
fn parts_on_a_canvas() {
    let (w, h) = (37, 23);
    let data = noise(w * h * 3, 11);
    let src = RgbView::new(w, h, &data).unwrap();
    let grey = [127, 127, 127];
    let one = Patching {
        patch_size: 14,
        merge_size: 1,
        temporal_patch_size: 1,
    };
    for (size, at) in [((56, 35), (0, 10)), ((30, 56), (13, 0)), ((56, 56), (0, 0))] {
        let part = Part::on_canvas(size.0, size.1, (56, 56), grey, at);
        check(src, &[part], Writer::PatchRows(one));
        check(src, &[part], Writer::Planes);
        check(
            src,
            &[part],
            Writer::HwcPatches {
                patch_size: 14,
                pad_to: None,
            },
        );
        check(src, &[part], Writer::Tiles(28));
    }
    let cut = Part {
        source: Some(Rect::new(5, 3, 20, 20)),
        crop: Some(Rect::new(1, 2, 15, 11)),
        ..Part::on_canvas(17, 14, (28, 42), [0, 200, 9], (7, 30))
    };
    check(src, &[cut], Writer::PatchRows(one));
    check(
        src,
        &[Part::on_canvas(0, 42, (42, 42), grey, (21, 0))],
        Writer::Planes,
    );
    check(
        src,
        &[Part::on_canvas(42, 0, (42, 42), grey, (0, 21))],
        Writer::PatchRows(one),
    );
}

#[test]
fn hwc_patches_with_padding() {
    let (w, h) = (37, 23);
    let data = noise(w * h * 3, 9);
    let src = RgbView::new(w, h, &data).unwrap();
    // Inkling: ceil(h / ps) rows, floor(w / ps) + 1 columns, the rest padded.
    let inkling = Writer::HwcPatches {
        patch_size: 5,
        pad_to: None,
    };
    let wide = Part {
        pad_to: Some((8 * 5, 5 * 5)),
        ..Part::resized(37, 23)
    };
    let part = Part {
        pad_to: Some((6 * 5, 4 * 5)),
        ..Part::resized(26, 19)
    };
    for p in [wide, part] {
        check(src, &[p], inkling);
    }
    // Gemma 4: zero patches after the image's 24, up to a fixed count (or none at 24).
    for pad_to in [24, 25, 31] {
        let writer = Writer::HwcPatches {
            patch_size: 5,
            pad_to: Some(pad_to),
        };
        check(src, &[part], writer);
    }
    // Fewer than the image has: refused, naming both counts.
    let recipe = Recipe {
        resize: Resize {
            resample: Resample::PilBicubic,
            order: PassOrder::Pillow13,
        },
        writer: Writer::HwcPatches {
            patch_size: 5,
            pad_to: Some(23),
        },
    };
    let err = compose(src, &[part], &recipe, &Codes, &Par::inline()).unwrap_err();
    assert!(
        matches!(&err, KernelError::InvalidArgument(m) if m.contains("24 patches") && m.contains("pad_to = 23")),
        "{err}"
    );
}

#[test]
fn what_a_writer_cannot_lay_out_is_refused() {
    let data = noise(20 * 20 * 3, 3);
    let src = RgbView::new(20, 20, &data).unwrap();
    let resize = Resize {
        resample: Resample::PilBicubic,
        order: PassOrder::Pillow13,
    };
    let p = Patching {
        patch_size: 2,
        merge_size: 2,
        temporal_patch_size: 2,
    };
    let bad = [
        (vec![], Writer::Planes),
        (
            vec![Part::resized(8, 8), Part::resized(8, 8)],
            Writer::Planes,
        ),
        (vec![Part::resized(10, 8)], Writer::Tiles(4)),
        (vec![Part::resized(10, 8)], Writer::PatchRows(p)),
        (
            vec![Part {
                pad_to: Some((12, 12)),
                ..Part::resized(8, 8)
            }],
            Writer::PatchRows(p),
        ),
        (
            vec![Part::resized(9, 8)],
            Writer::HwcPatches {
                patch_size: 4,
                pad_to: None,
            },
        ),
        (vec![Part::resized(8, 8)], Writer::Tiles(0)),
        // A canvas needs its size, must hold the image, and cannot be empty.
        (
            vec![Part {
                pad_to: None,
                ..Part::on_canvas(8, 8, (8, 8), [1, 2, 3], (0, 0))
            }],
            Writer::Planes,
        ),
        (
            vec![Part::on_canvas(8, 8, (12, 12), [1, 2, 3], (5, 0))],
            Writer::Planes,
        ),
        (
            vec![Part::on_canvas(8, 8, (12, 12), [1, 2, 3], (0, usize::MAX))],
            Writer::Planes,
        ),
        (
            vec![Part::on_canvas(0, 0, (0, 8), [1, 2, 3], (0, 0))],
            Writer::Planes,
        ),
        (vec![Part::resized(0, 8)], Writer::Planes),
    ];
    for (parts, writer) in bad {
        let recipe = Recipe { resize, writer };
        let got = compose(src, &parts, &recipe, &Codes, &Par::new(2));
        assert!(
            matches!(got, Err(KernelError::InvalidArgument(_))),
            "{parts:?} {writer:?}"
        );
    }
}
