//! What the writers read: the pixels of one *part* of an image, resized, band by band.
//!
//! A part is a rectangle of the decoded image (all of it by default) resized to a size (a
//! plain copy when the size does not change), of which a rectangle is kept (all of it by
//! default), optionally padded on the right and bottom to a larger size. Every feature of
//! today's families is one or more parts written out by one writer: a Qwen image is one part
//! resized to its `smart_resize` size, an InternVL image a canvas part plus a thumbnail part,
//! a Gemma 3 image with pan and scan the whole image plus each crop, a CLIP image a part
//! resized by its shortest edge with the centre kept.
//!
//! The rows come from [`ResizePlan::run_rows`], so a band is bit-identical to the same rows of
//! `resize_rgb`, and the resized part never exists whole unless a writer asks for it.

use crate::error::{KernelError, Result};
use crate::image::RgbView;
use crate::resize::{PassOrder, Resample, ResizePlan, RowScratch};

/// A rectangle `(x, y, width, height)` in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Rect {
    /// Left column.
    pub x: usize,
    /// Top row.
    pub y: usize,
    /// Width.
    pub w: usize,
    /// Height.
    pub h: usize,
}

impl Rect {
    /// The rectangle `(x, y, w, h)`.
    pub const fn new(x: usize, y: usize, w: usize, h: usize) -> Self {
        Self { x, y, w, h }
    }

    fn fits(&self, width: usize, height: usize) -> bool {
        self.w > 0
            && self.h > 0
            && self.x.checked_add(self.w).is_some_and(|r| r <= width)
            && self.y.checked_add(self.h).is_some_and(|b| b <= height)
    }
}

/// One part of an image, as the family's plan describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// The rectangle of the decoded image to resize (`None`: the whole image).
    pub source: Option<Rect>,
    /// The size `(width, height)` it is resized to.
    pub size: (usize, usize),
    /// The rectangle of the resized part that is kept (`None`: all of it).
    pub crop: Option<Rect>,
    /// Pad the kept pixels on the right and bottom to this `(width, height)` with the
    /// encoder's pad value (`None`: no padding).
    pub pad_to: Option<(usize, usize)>,
}

impl Part {
    /// The whole image resized to `width x height`.
    pub const fn resized(width: usize, height: usize) -> Self {
        Self {
            source: None,
            size: (width, height),
            crop: None,
            pad_to: None,
        }
    }

    /// The `(width, height)` of the kept pixels.
    pub fn kept(&self) -> (usize, usize) {
        self.crop.map_or(self.size, |c| (c.w, c.h))
    }

    /// The `(width, height)` the part occupies in the output (kept pixels plus padding).
    pub fn extent(&self) -> (usize, usize) {
        self.pad_to.unwrap_or_else(|| self.kept())
    }
}

/// How the parts are resized: the resampler and (for the Pillow ones) the pass order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resize {
    /// The resampler.
    pub resample: Resample,
    /// The pass order of the Pillow resamplers.
    pub order: PassOrder,
}

/// A part of one image, planned: the rows of its kept rectangle on demand.
#[doc(hidden)]
pub struct Source<'a> {
    image: RgbView<'a>,
    /// The source rectangle, copied out tightly packed (`None`: the whole image is read).
    cut: Option<Vec<u8>>,
    in_w: usize,
    in_h: usize,
    plan: Option<ResizePlan>,
    /// The kept rectangle, in resized coordinates.
    keep: Rect,
    /// The part's extent in the output (kept plus padding).
    pub(crate) extent: (usize, usize),
}

/// Rows of a part's kept rectangle: row `y` is `data[y * stride + x0 ..][.. width * 3]`.
pub(crate) struct Rows<'b> {
    pub(crate) data: &'b [u8],
    pub(crate) stride: usize,
    pub(crate) x0: usize,
    /// Kept pixels per row.
    pub(crate) width: usize,
    /// Rows held.
    pub(crate) height: usize,
}

impl Rows<'_> {
    /// Row `y` of the band, `width` pixels.
    #[inline]
    pub(crate) fn row(&self, y: usize) -> &[u8] {
        let at = y * self.stride + self.x0;
        &self.data[at..at + self.width * 3]
    }
}

/// A thread's buffers for [`Source::rows`]: reuse one across the bands of one part, in
/// order, so that the resize keeps the intermediate rows consecutive bands share.
#[derive(Default)]
pub(crate) struct Band {
    buf: Vec<u8>,
    scratch: RowScratch,
}

impl<'a> Source<'a> {
    /// Plan `part` of `image`; a rectangle that does not fit, an empty size or padding
    /// smaller than the kept pixels is an [`KernelError::InvalidArgument`].
    pub(crate) fn new(image: RgbView<'a>, part: &Part, resize: Resize) -> Result<Self> {
        let bad = |what: String| Err(KernelError::InvalidArgument(what));
        let (iw, ih) = (image.width, image.height);
        let cut = match part.source {
            None => None,
            Some(r) if !r.fits(iw, ih) => {
                return bad(format!(
                    "crop {}x{} at ({}, {}) does not fit a {iw}x{ih} image",
                    r.w, r.h, r.x, r.y
                ))
            }
            Some(r) if (r.x, r.y, r.w, r.h) == (0, 0, iw, ih) => None,
            Some(r) => {
                let stride = iw * 3;
                let mut buf = Vec::new();
                buf.try_reserve_exact(r.w * r.h * 3).map_err(|_| {
                    KernelError::Limit(format!("a {}x{} crop cannot be allocated", r.w, r.h))
                })?;
                for row in r.y..r.y + r.h {
                    buf.extend_from_slice(&image.data[row * stride + r.x * 3..][..r.w * 3]);
                }
                Some(buf)
            }
        };
        let (in_w, in_h) = part.source.map_or((iw, ih), |r| (r.w, r.h));
        let (w, h) = part.size;
        if w == 0 || h == 0 {
            return bad(format!("a part cannot be resized to {w}x{h}"));
        }
        let plan = if (in_w, in_h) == (w, h) {
            None
        } else {
            Some(ResizePlan::new(
                in_w,
                in_h,
                w,
                h,
                resize.resample,
                resize.order,
            )?)
        };
        let keep = match part.crop {
            None => Rect::new(0, 0, w, h),
            Some(c) if c.fits(w, h) => c,
            Some(c) => {
                return bad(format!(
                    "crop {}x{} at ({}, {}) does not fit the {w}x{h} resized part",
                    c.w, c.h, c.x, c.y
                ))
            }
        };
        let extent = match part.pad_to {
            None => (keep.w, keep.h),
            Some((pw, ph)) if pw >= keep.w && ph >= keep.h => (pw, ph),
            Some((pw, ph)) => {
                return bad(format!(
                    "cannot pad {}x{} pixels to the smaller {pw}x{ph}",
                    keep.w, keep.h
                ))
            }
        };
        Ok(Self {
            image,
            cut,
            in_w,
            in_h,
            plan,
            keep,
            extent,
        })
    }

    /// Kept `(width, height)` (the pixels inside the padding).
    pub(crate) fn kept(&self) -> (usize, usize) {
        (self.keep.w, self.keep.h)
    }

    fn input(&self) -> &[u8] {
        self.cut.as_deref().unwrap_or(self.image.data)
    }

    /// Kept rows `y0..y1` (`y1 <= kept height`), resized into `band` when a resize is due.
    pub(crate) fn rows<'b>(&'b self, y0: usize, y1: usize, band: &'b mut Band) -> Result<Rows<'b>> {
        let (kw, kh) = self.kept();
        if y0 >= y1 || y1 > kh {
            return Err(KernelError::InvalidArgument(format!(
                "rows {y0}..{y1} of a {kh}-row part"
            )));
        }
        let (r0, r1) = (self.keep.y + y0, self.keep.y + y1);
        let x0 = self.keep.x * 3;
        match &self.plan {
            None => {
                let stride = self.in_w * 3;
                let data = self.input().get(r0 * stride..r1 * stride).ok_or_else(|| {
                    KernelError::InvalidArgument(format!("rows {r0}..{r1} are outside the image"))
                })?;
                Ok(Rows {
                    data,
                    stride,
                    x0,
                    width: kw,
                    height: y1 - y0,
                })
            }
            Some(plan) => {
                let stride = plan.out_w * 3;
                let n = (r1 - r0) * stride;
                if band.buf.len() < n {
                    band.buf.resize(n, 0);
                }
                let (lo, hi) = plan.input_rows(r0, r1);
                let in_row = self.in_w * 3;
                let input = self.input().get(lo * in_row..hi * in_row).ok_or_else(|| {
                    KernelError::InvalidArgument(format!(
                        "input rows {lo}..{hi} are outside the {}-row image",
                        self.in_h
                    ))
                })?;
                plan.run_rows(input, r0, r1, &mut band.buf[..n], &mut band.scratch)?;
                Ok(Rows {
                    data: &band.buf[..n],
                    stride,
                    x0,
                    width: kw,
                    height: y1 - y0,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::par::Par;
    use crate::resize::resize_rgb;
    use crate::test_util::noise;

    /// A part's rows, in bands of any height, are the crop of the crop's resize.
    #[test]
    fn bands_are_the_crop_of_the_resize_of_the_source_crop() {
        let (w, h) = (41, 29);
        let data = noise(w * h * 3, 7);
        let img = RgbView::new(w, h, &data).unwrap();
        let resize = Resize {
            resample: Resample::PilBicubic,
            order: PassOrder::Pillow13,
        };
        let part = Part {
            source: Some(Rect::new(3, 2, 30, 25)),
            size: (20, 17),
            crop: Some(Rect::new(2, 1, 15, 14)),
            pad_to: Some((16, 16)),
        };
        let mut cut = Vec::new();
        for y in 2..27 {
            cut.extend_from_slice(&data[(y * w + 3) * 3..][..30 * 3]);
        }
        let whole = resize_rgb(
            RgbView::new(30, 25, &cut).unwrap(),
            20,
            17,
            resize.resample,
            resize.order,
            &Par::inline(),
        )
        .unwrap();
        let src = Source::new(img, &part, resize).unwrap();
        assert_eq!((src.kept(), src.extent), ((15, 14), (16, 16)));
        for step in [1, 3, 14] {
            let mut band = Band::default();
            let mut y = 0;
            while y < 14 {
                let y1 = (y + step).min(14);
                let rows = src.rows(y, y1, &mut band).unwrap();
                for k in 0..y1 - y {
                    let at = ((y + k + 1) * 20 + 2) * 3;
                    assert_eq!(rows.row(k), &whole.data[at..at + 15 * 3], "step {step}");
                }
                y = y1;
            }
        }
    }

    #[test]
    fn misfits_are_refused() {
        let data = noise(4 * 3 * 3, 1);
        let img = RgbView::new(4, 3, &data).unwrap();
        let resize = Resize {
            resample: Resample::PilBicubic,
            order: PassOrder::Pillow13,
        };
        let cases = [
            Part {
                source: Some(Rect::new(3, 0, 2, 1)),
                ..Part::resized(2, 2)
            },
            Part {
                source: Some(Rect::new(usize::MAX, 0, 2, 1)),
                ..Part::resized(2, 2)
            },
            Part::resized(0, 2),
            Part {
                crop: Some(Rect::new(1, 1, 2, 2)),
                ..Part::resized(2, 2)
            },
            Part {
                pad_to: Some((1, 4)),
                ..Part::resized(2, 2)
            },
        ];
        for part in cases {
            assert!(Source::new(img, &part, resize).is_err(), "{part:?}");
        }
    }
}
