//! What the writers read: the pixels of one *part* of an image, resized, band by band.
//!
//! A part is a rectangle of the decoded image (all of it by default) resized to a size (a
//! plain copy when the size does not change), of which a rectangle is kept (all of it by
//! default), optionally padded on the right and bottom to a larger size with the encoder's
//! pad value, or placed at an offset on a canvas of one colour (a [`Fill`]:
//! `PIL.ImageOps.pad`'s centred letterbox, whose canvas samples go through the table like any
//! pixel). Every feature of
//! today's families is one or more parts written out by one writer: a Qwen image is one part
//! resized to its `smart_resize` size, an InternVL image a canvas part plus a thumbnail part,
//! a Gemma 3 image with pan and scan the whole image plus each crop, a CLIP image a part
//! resized by its shortest edge with the centre kept.
//!
//! The rows come from [`ResizePlan::run_rows`], so a band is bit-identical to the same rows of
//! `resize_rgb`, and the resized part never exists whole unless a writer asks for it.

use crate::error::{KernelError, Result};
use crate::feed::RowReader;
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
    /// Pad the kept pixels to this `(width, height)`: on the right and bottom with the
    /// encoder's pad value, or as `fill` says (`None`: no padding).
    pub pad_to: Option<(usize, usize)>,
    /// Put the kept pixels on a canvas of one colour instead (`pad_to` is its size).
    pub fill: Option<Fill>,
}

/// A canvas of one RGB colour under a part's kept pixels: the canvas samples are pixels like
/// the others (the table's values of `color`, and `color` itself as the compact form's codes),
/// so a writer sees a part with no padding. The kept pixels may be empty (a side that a
/// contain-fit rounds to 0): the canvas is then all `color`, as Pillow pastes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fill {
    /// The canvas colour, RGB.
    pub color: [u8; 3],
    /// `(x, y)` of the kept pixels' top-left corner on the canvas.
    pub at: (usize, usize),
}

impl Part {
    /// The whole image resized to `width x height`.
    pub const fn resized(width: usize, height: usize) -> Self {
        Self {
            source: None,
            size: (width, height),
            crop: None,
            pad_to: None,
            fill: None,
        }
    }

    /// The whole image resized to `width x height` and placed at `at` on a `canvas`
    /// `(width, height)` of `color` (`PIL.ImageOps.pad`, `paste` on `Image.new`).
    pub const fn on_canvas(
        width: usize,
        height: usize,
        canvas: (usize, usize),
        color: [u8; 3],
        at: (usize, usize),
    ) -> Self {
        Self {
            source: None,
            size: (width, height),
            crop: None,
            pad_to: Some(canvas),
            fill: Some(Fill { color, at }),
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

/// Where the pixels of a part come from: a decoded image, or an image whose rows are still
/// being decoded, top to bottom, into a [`RowFeed`](crate::feed::RowFeed).
#[derive(Clone, Copy)]
pub(crate) enum Pixels<'a> {
    /// Every row is there.
    Whole(RgbView<'a>),
    /// Rows arrive in order; a band waits for the ones it reads.
    Feed {
        rows: RowReader<'a>,
        width: usize,
        height: usize,
    },
}

impl<'a> Pixels<'a> {
    /// `(width, height)` of the image.
    fn size(&self) -> (usize, usize) {
        match *self {
            Self::Whole(v) => (v.width, v.height),
            Self::Feed { width, height, .. } => (width, height),
        }
    }

    /// Rows `..hi` of the image, whole and tightly packed, once they are there.
    fn upto(&self, hi: usize) -> Result<&'a [u8]> {
        match *self {
            Self::Whole(v) => v.data.get(..hi * v.width * 3),
            Self::Feed { rows, .. } => rows.wait(hi),
        }
        .ok_or_else(|| {
            KernelError::InvalidArgument(format!(
                "rows ..{hi} of the image never arrived (its decode stopped)"
            ))
        })
    }
}

/// A part of one image, planned: the rows of its kept rectangle on demand.
#[doc(hidden)]
pub struct Source<'a> {
    image: Pixels<'a>,
    /// The source rectangle (the whole image when the part names none).
    rect: Rect,
    /// The source rectangle of a decoded image, copied out tightly packed (`None`: the whole
    /// image is read, or a fed image's rectangle is cut band by band).
    cut: Option<Vec<u8>>,
    in_w: usize,
    in_h: usize,
    plan: Option<ResizePlan>,
    /// The kept rectangle, in resized coordinates (empty only on a canvas).
    keep: Rect,
    /// The canvas under the kept pixels, if any.
    fill: Option<Fill>,
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

/// A thread's buffers for [`Source::rows`]: reuse one across the bands of one part (in any
/// order; in order, the resize keeps the intermediate rows consecutive bands share).
#[derive(Default)]
pub(crate) struct Band {
    buf: Vec<u8>,
    scratch: RowScratch,
    /// Canvas rows (a part with a [`Fill`]).
    canvas: Vec<u8>,
    /// A fed image's source rectangle, the rows one band reads.
    cut: Vec<u8>,
}

/// The buffers [`Source::kept_rows`] works in.
struct KeptBufs<'b> {
    buf: &'b mut Vec<u8>,
    scratch: &'b mut RowScratch,
    cut: &'b mut Vec<u8>,
}

impl<'a> Source<'a> {
    /// Plan `part` of `image`; a rectangle that does not fit, an empty size (but on a
    /// canvas), padding smaller than the kept pixels or a canvas that does not hold them is an
    /// [`KernelError::InvalidArgument`].
    pub(crate) fn new(image: Pixels<'a>, part: &Part, resize: Resize) -> Result<Self> {
        let bad = |what: String| Err(KernelError::InvalidArgument(what));
        let (iw, ih) = image.size();
        let (w, h) = part.size;
        let empty = w == 0 || h == 0;
        if empty && (part.fill.is_none() || part.crop.is_some()) {
            return bad(format!("a part cannot be resized to {w}x{h}"));
        }
        let whole = Rect::new(0, 0, iw, ih);
        let (rect, cut) = match part.source {
            None => (whole, None),
            Some(r) if !r.fits(iw, ih) => {
                return bad(format!(
                    "crop {}x{} at ({}, {}) does not fit a {iw}x{ih} image",
                    r.w, r.h, r.x, r.y
                ))
            }
            Some(r) if r == whole || empty => (whole, None),
            Some(r) => match image {
                Pixels::Whole(view) => {
                    let stride = iw * 3;
                    let mut buf = Vec::new();
                    buf.try_reserve_exact(r.w * r.h * 3).map_err(|_| {
                        KernelError::Limit(format!("a {}x{} crop cannot be allocated", r.w, r.h))
                    })?;
                    for row in r.y..r.y + r.h {
                        buf.extend_from_slice(&view.data[row * stride + r.x * 3..][..r.w * 3]);
                    }
                    (r, Some(buf))
                }
                Pixels::Feed { .. } => (r, None),
            },
        };
        let (in_w, in_h) = (rect.w, rect.h);
        let plan = if (in_w, in_h) == (w, h) || empty {
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
        let (ax, ay) = part.fill.map_or((0, 0), |f| f.at);
        let within =
            |at: usize, len: usize, side: usize| at.checked_add(len).is_some_and(|e| e <= side);
        let extent = match (part.pad_to, part.fill) {
            (None, None) => (keep.w, keep.h),
            (None, Some(_)) => return bad("a canvas part needs pad_to, the canvas size".into()),
            (Some((pw, ph)), fill) if within(ax, keep.w, pw) && within(ay, keep.h, ph) => {
                if fill.is_some() && (pw == 0 || ph == 0) {
                    return bad(format!("a canvas cannot be {pw}x{ph}"));
                }
                (pw, ph)
            }
            (Some((pw, ph)), None) => {
                return bad(format!(
                    "cannot pad {}x{} pixels to the smaller {pw}x{ph}",
                    keep.w, keep.h
                ))
            }
            (Some((pw, ph)), Some(_)) => {
                return bad(format!(
                    "{}x{} pixels at ({ax}, {ay}) do not fit a {pw}x{ph} canvas",
                    keep.w, keep.h
                ))
            }
        };
        Ok(Self {
            image,
            rect,
            cut,
            in_w,
            in_h,
            plan,
            keep,
            fill: part.fill,
            extent,
        })
    }

    /// `(width, height)` a writer reads from [`Source::rows`]: the pixels inside the padding,
    /// which on a canvas are all of it.
    pub(crate) fn kept(&self) -> (usize, usize) {
        match self.fill {
            Some(_) => self.extent,
            None => (self.keep.w, self.keep.h),
        }
    }

    /// The kept rows (in kept coordinates) inside rows `y0..y1` of what a writer reads: all of
    /// them, or on a canvas the part of the band the kept pixels cover (possibly none).
    fn kept_span(&self, y0: usize, y1: usize) -> (usize, usize) {
        match self.fill {
            None => (y0, y1),
            Some(fill) => {
                let (ay, kh) = (fill.at.1, self.keep.h);
                (y0.max(ay).min(ay + kh) - ay, y1.max(ay).min(ay + kh) - ay)
            }
        }
    }

    /// How many rows of the image, from the top, rows `y0..y1` of [`Source::rows`] read (0 when
    /// they read none): the order in which bands of a fed image can run.
    pub(crate) fn need(&self, y0: usize, y1: usize) -> usize {
        let (k0, k1) = self.kept_span(y0, y1);
        if k0 >= k1 || self.keep.w == 0 {
            return 0;
        }
        let (r0, r1) = (self.keep.y + k0, self.keep.y + k1);
        let hi = self.plan.as_ref().map_or(r1, |p| p.input_rows(r0, r1).1);
        self.rect.y + hi
    }

    /// Rows `y0..y1` (`y1 <=` the kept height) of what a writer reads: the kept pixels, or on a
    /// canvas the canvas rows with the kept pixels in place; resized into `band` when due. On a
    /// fed image this waits for the rows it reads.
    pub(crate) fn rows<'b>(&'b self, y0: usize, y1: usize, band: &'b mut Band) -> Result<Rows<'b>> {
        let (_, kh) = self.kept();
        if y0 >= y1 || y1 > kh {
            return Err(KernelError::InvalidArgument(format!(
                "rows {y0}..{y1} of a {kh}-row part"
            )));
        }
        match self.fill {
            None => {
                let bufs = KeptBufs {
                    buf: &mut band.buf,
                    scratch: &mut band.scratch,
                    cut: &mut band.cut,
                };
                self.kept_rows(y0, y1, bufs)
            }
            Some(fill) => self.canvas_rows(fill, y0, y1, band),
        }
    }

    /// Canvas rows `y0..y1` into `band.canvas`: `fill.color` around the kept pixels.
    fn canvas_rows<'b>(
        &'b self,
        fill: Fill,
        y0: usize,
        y1: usize,
        band: &'b mut Band,
    ) -> Result<Rows<'b>> {
        let (cw, _) = self.extent;
        let kw = self.keep.w;
        let (ax, ay) = fill.at;
        let stride = cw * 3;
        let n = (y1 - y0) * stride;
        if band.canvas.len() < n {
            band.canvas.resize(n, 0);
        }
        let canvas = &mut band.canvas[..n];
        // The kept rows inside this band, in kept coordinates.
        let (k0, k1) = self.kept_span(y0, y1);
        let paint = |dst: &mut [u8]| {
            for px in dst.chunks_exact_mut(3) {
                px.copy_from_slice(&fill.color);
            }
        };
        if k0 == k1 || kw == 0 {
            paint(canvas);
        } else {
            let bufs = KeptBufs {
                buf: &mut band.buf,
                scratch: &mut band.scratch,
                cut: &mut band.cut,
            };
            let kept = self.kept_rows(k0, k1, bufs)?;
            for (i, row) in canvas.chunks_exact_mut(stride).enumerate() {
                let y = y0 + i;
                if y < ay + k0 || y >= ay + k1 {
                    paint(row);
                    continue;
                }
                let (left, rest) = row.split_at_mut(ax * 3);
                let (mid, right) = rest.split_at_mut(kw * 3);
                paint(left);
                mid.copy_from_slice(kept.row(y - ay - k0));
                paint(right);
            }
        }
        Ok(Rows {
            data: &band.canvas[..n],
            stride,
            x0: 0,
            width: cw,
            height: y1 - y0,
        })
    }

    /// Rows `lo..hi` of the source rectangle, whole and tightly packed (`in_w` pixels each):
    /// from the copy of a decoded image's rectangle, from the image itself when the rectangle
    /// is all of it, else (a fed image) copied into `cut` once they are there.
    fn input<'b>(&'b self, lo: usize, hi: usize, cut: &'b mut Vec<u8>) -> Result<&'b [u8]> {
        let in_row = self.in_w * 3;
        let outside = || {
            KernelError::InvalidArgument(format!(
                "input rows {lo}..{hi} are outside the {}-row image",
                self.in_h
            ))
        };
        if hi > self.in_h || lo > hi {
            return Err(outside());
        }
        if let Some(c) = &self.cut {
            return c.get(lo * in_row..hi * in_row).ok_or_else(outside);
        }
        let r = self.rect;
        let data = self.image.upto(r.y + hi)?;
        let (iw, _) = self.image.size();
        if r.x == 0 && r.w == iw {
            return data.get((r.y + lo) * in_row..).ok_or_else(outside);
        }
        cut.clear();
        for row in r.y + lo..r.y + hi {
            cut.extend_from_slice(&data[(row * iw + r.x) * 3..][..in_row]);
        }
        Ok(&cut[..])
    }

    /// Kept rows `y0..y1` (`y1 <=` the kept rectangle's height), resized into `bufs.buf` when
    /// a resize is due.
    fn kept_rows<'b>(&'b self, y0: usize, y1: usize, bufs: KeptBufs<'b>) -> Result<Rows<'b>> {
        let kw = self.keep.w;
        let (r0, r1) = (self.keep.y + y0, self.keep.y + y1);
        let x0 = self.keep.x * 3;
        match &self.plan {
            None => {
                let r = self.rect;
                let (iw, _) = self.image.size();
                if self.cut.is_some() || r.x == 0 && r.w == iw {
                    let data = self.input(r0, r1, bufs.cut)?;
                    return Ok(Rows {
                        data,
                        stride: self.in_w * 3,
                        x0,
                        width: kw,
                        height: y1 - y0,
                    });
                }
                // A fed image's rectangle, read in place.
                let data = self.image.upto(r.y + r1)?;
                Ok(Rows {
                    data: &data[(r.y + r0) * iw * 3..],
                    stride: iw * 3,
                    x0: r.x * 3 + x0,
                    width: kw,
                    height: y1 - y0,
                })
            }
            Some(plan) => {
                let stride = plan.out_w * 3;
                let n = (r1 - r0) * stride;
                if bufs.buf.len() < n {
                    bufs.buf.resize(n, 0);
                }
                let (lo, hi) = plan.input_rows(r0, r1);
                let input = self.input(lo, hi, bufs.cut)?;
                let input = input.get(..(hi - lo) * self.in_w * 3).ok_or_else(|| {
                    KernelError::InvalidArgument(format!("input rows {lo}..{hi} are cut short"))
                })?;
                plan.run_rows(input, r0, r1, &mut bufs.buf[..n], bufs.scratch)?;
                Ok(Rows {
                    data: &bufs.buf[..n],
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
            fill: None,
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
        let src = Source::new(Pixels::Whole(img), &part, resize).unwrap();
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
            assert!(
                Source::new(Pixels::Whole(img), &part, resize).is_err(),
                "{part:?}"
            );
        }
    }
}
