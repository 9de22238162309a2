//! The one feature pipeline: decoded RGB pixels to the tensor a vision tower eats, in one
//! fused pass per image. Every family's feature is a composition of four pieces:
//!
//! 1. [`Part`]s: which rectangles of the image are resized to which sizes (and cropped or
//!    padded), each read band by band through [`ResizePlan::run_rows`], bit-exact with the
//!    resamplers of [`crate::resize`];
//! 2. a [`Table`]: what each uint8 sample becomes, with the reference's rescale-then-normalize
//!    arithmetic ([`Arith`]), in float32 or rounded to bfloat16 ([`Bf16Table`]);
//! 3. an encoder ([`Encode`]): the table's values (the full form) or the samples themselves
//!    (the compact form's codes, looked up later by whoever holds the table);
//! 4. a [`Writer`]: the output layout: channel planes (CHW, whole or tiled), Qwen's patch rows
//!    with a temporal repeat, or channels-last pixel patches (HWC).
//!
//! [`compose`] runs a [`Recipe`] (resampler and writer) over an image's parts with one
//! encoder. Because the full and compact forms are one walk with two encoders, a compact
//! feature expands to the full one bit for bit by construction.
//!
//! Parity: the table of each [`Arith`] is the reference's float arithmetic, sample by sample
//! (tested for every value); the writers are plain data movement; the resize is that of
//! [`crate::resize`]. Threads: only through [`Par`]; the output is identical for every count.
//!
//! [`ResizePlan::run_rows`]: crate::resize::ResizePlan::run_rows

pub mod alloc;
mod encode;
mod fed;
mod hwc_patches;
mod parts;
mod patch_rows;
mod planes;
mod simd;
mod table;

pub use encode::{Bf16Values, Codes, Encode, Values};
pub use hwc_patches::hwc_patch_row;
pub use parts::{Fill, Part, Rect, Resize};
pub use patch_rows::Patching;
pub use table::{bf16_rne, Arith, Backend, Bf16Table, Filter, Lanes, Table};

use crate::error::{KernelError, Result};
use crate::feed::{RowFeed, RowWriter};
use crate::image::RgbView;
use crate::par::Par;
use parts::{Pixels, Source};

/// The output layout of a feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    /// One part as three channel planes, `[3, H, W]`.
    Planes,
    /// Every part cut into `T x T` tiles, row-major, each three planes: `[tiles, 3, T, T]`.
    Tiles(usize),
    /// One part as Qwen-VL's patch rows: `[gh * gw, 3 * tps * ps * ps]` (compact:
    /// `[gh * gw, 3 * ps * ps]`, frames once).
    PatchRows(Patching),
    /// One part as `patch_size` square patches, channels last: `[rows * cols, ps, ps, 3]`,
    /// with the encoder's pad value where the extent reaches past the kept pixels. With
    /// `pad_to`, zero patches follow up to that many (every element `0`: 0.0, or code 0),
    /// `[pad_to, ps, ps, 3]`: Gemma 4's fixed-size `pixel_values`, written in place instead of
    /// copied into a larger array; a part with more patches is refused.
    HwcPatches {
        /// The patch side.
        patch_size: usize,
        /// The patches of the output, the image's then zeros (`None`: the image's only).
        pad_to: Option<usize>,
    },
}

/// How an image becomes its feature: the resampler of its parts and the writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recipe {
    /// The resampler and pass order.
    pub resize: Resize,
    /// The output layout.
    pub writer: Writer,
}

/// A feature as [`compose`] returns it: the elements and their shape.
#[derive(Debug)]
pub struct Composed<T> {
    /// The elements, row-major.
    pub data: Vec<T>,
    /// The shape (see [`Writer`]).
    pub shape: Vec<usize>,
}

/// Run `recipe` over `parts` of `image`, writing every sample through `enc` (one of
/// [`Values`], [`Bf16Values`] or [`Codes`]). A writer that takes one part refuses more; a
/// part that does not fit its writer (a tile or patch grid that does not divide it) is an
/// [`KernelError::InvalidArgument`]; an output too large to allocate a [`KernelError::Limit`];
/// a set cancel flag of `par` [`KernelError::Cancelled`] (never a partial output).
pub fn compose<E: ComposeEncoder>(
    image: RgbView<'_>,
    parts: &[Part],
    recipe: &Recipe,
    enc: &E,
    par: &Par,
) -> Result<Composed<E::Out>> {
    let sources = sources_of(Pixels::Whole(image), parts, recipe)?;
    let (len, shape) = layout(&sources, recipe, enc)?;
    let (mut out, store) = E::reserve(len)?;
    let spare = &mut out.spare_capacity_mut()[..len];
    match recipe.writer {
        Writer::Planes => planes::write(&sources, None, enc, par, spare)?,
        Writer::Tiles(t) => planes::write(&sources, Some(t), enc, par, spare)?,
        Writer::PatchRows(p) => {
            patch_rows::write(one(&sources, recipe)?, p, enc, par, spare, store)?
        }
        Writer::HwcPatches { patch_size, .. } => {
            let src = one(&sources, recipe)?;
            let (head, tail) = spare.split_at_mut(hwc_patches::len(src, patch_size)?);
            hwc_patches::write(src, patch_size, enc, par, head)?;
            zero(tail);
        }
    }
    // A set cancel flag made the banded loops skip bands: the output is incomplete.
    par.check()?;
    // SAFETY: `len <= capacity` (reserved above), and the writer returned Ok with the cancel
    // flag clear (it is never cleared once set, so no band was skipped), which means it wrote
    // every one of the `len` elements (each writer's contract).
    unsafe { out.set_len(len) };
    Ok(Composed { data: out, shape })
}

/// [`compose`] from encoded bytes, decoding as `opts` says: `plan(width, height)` gives the
/// parts of the upright image from its size, which the header tells before any pixel. Where
/// the decode streams its rows ([`crate::decode::stream_size`]: a JPEG or a non-interlaced PNG
/// with no orientation to apply) and `par` has two threads or more, this is [`compose_fed`] on the decode's feed;
/// otherwise the image is decoded whole, then composed. The output is [`compose`]'s of the
/// decoded image, bit for bit, for every thread count, and so are the errors: the decode's
/// first (a broken scan is reported before a plan or a part that refuses the size), then the
/// plan's, then the writer's. The cancel flag of `par` also stops the decode.
#[cfg(feature = "decode")]
pub fn compose_encoded<E, F>(
    data: &[u8],
    opts: &crate::decode::DecodeOptions,
    plan: F,
    recipe: &Recipe,
    enc: &E,
    par: &Par,
) -> Result<Composed<E::Out>>
where
    E: ComposeEncoder,
    F: FnOnce(usize, usize) -> Result<Vec<Part>>,
{
    let (mut feed, decode) = crate::decode::decode_rgb_rows(data, opts)?;
    let (w, h) = (decode.width(), decode.height());
    if par.threads() <= 1 || !decode.streams() {
        let (writer, _) = feed.split();
        decode.run(writer, par)?;
        let pixels = feed
            .into_vec()
            .ok_or_else(|| KernelError::InvalidArgument("the decode left rows unwritten".into()))?;
        let parts = plan(w, h)?;
        return compose(RgbView::new(w, h, &pixels)?, &parts, recipe, enc, par);
    }
    match plan(w, h) {
        Ok(parts) => compose_fed(
            &mut feed,
            |rows| decode.run(rows, par),
            &parts,
            recipe,
            enc,
            par,
        ),
        Err(e) => {
            let (writer, _) = feed.split();
            decode.run(writer, par)?;
            Err(e)
        }
    }
}

/// [`compose`] of an image whose rows `produce` is still writing into `feed` (`feed.rows()`
/// rows of `feed.row_bytes() / 3` RGB pixels, top to bottom, published as they are final):
/// `produce` runs on the calling thread while the writer's bands run on the other threads of
/// `par` in the order their rows arrive, each waiting for the rows it reads
/// ([`Par::pipeline_jobs`]); then the calling thread joins them. The output is [`compose`]'s of
/// the finished image, bit for bit, for every thread count and any timing. Errors: `produce`'s
/// first (bands that stopped waiting when it gave up failed because of it), then the parts' and
/// the writer's; `produce` always runs, even when the parts are refused before any band.
/// Setting `par`'s cancel flag stops the bands ([`KernelError::Cancelled`]); `produce` should
/// watch it too.
pub fn compose_fed<E, P>(
    feed: &mut RowFeed,
    produce: P,
    parts: &[Part],
    recipe: &Recipe,
    enc: &E,
    par: &Par,
) -> Result<Composed<E::Out>>
where
    E: ComposeEncoder,
    P: FnOnce(RowWriter<'_>) -> Result<()>,
{
    let (w, h) = (feed.row_bytes() / 3, feed.rows());
    let (writer, reader) = feed.split();
    let image = Pixels::Feed {
        rows: reader,
        width: w,
        height: h,
    };
    // `produce` runs once: in the pipeline, or after a writer that failed before starting it.
    let pending = std::cell::Cell::new(Some((produce, writer)));
    let run = || match pending.take() {
        Some((produce, writer)) => produce(writer),
        None => Ok(()),
    };
    let composed = (|| {
        let sources = sources_of(image, parts, recipe)?;
        let (len, shape) = layout(&sources, recipe, enc)?;
        let (mut out, store) = E::reserve(len)?;
        let spare = &mut out.spare_capacity_mut()[..len];
        match recipe.writer {
            Writer::Planes => planes::write_streamed(&sources, None, enc, par, spare, run)?,
            Writer::Tiles(t) => planes::write_streamed(&sources, Some(t), enc, par, spare, run)?,
            Writer::PatchRows(p) => {
                let src = one(&sources, recipe)?;
                patch_rows::write_streamed(src, p, enc, par, spare, store, run)?;
            }
            Writer::HwcPatches { patch_size, .. } => {
                let src = one(&sources, recipe)?;
                let (head, tail) = spare.split_at_mut(hwc_patches::len(src, patch_size)?);
                zero(tail);
                hwc_patches::write_streamed(src, patch_size, enc, par, head, run)?;
            }
        }
        // SAFETY: as in `compose`: every one of the `len` reserved elements was written.
        unsafe { out.set_len(len) };
        Ok(Composed { data: out, shape })
    })();
    run()?;
    composed
}

/// Every part of `image`, planned for `recipe`'s resampler (at least one).
fn sources_of<'a>(image: Pixels<'a>, parts: &[Part], recipe: &Recipe) -> Result<Vec<Source<'a>>> {
    if parts.is_empty() {
        return Err(KernelError::InvalidArgument(
            "a feature needs at least one part".into(),
        ));
    }
    parts
        .iter()
        .map(|p| Source::new(image, p, recipe.resize))
        .collect()
}

/// The one source of a writer that takes one part.
fn one<'s, 'a>(sources: &'s [Source<'a>], recipe: &Recipe) -> Result<&'s Source<'a>> {
    match sources {
        [s] => Ok(s),
        _ => Err(KernelError::InvalidArgument(format!(
            "the {:?} writer takes one part, got {}",
            recipe.writer,
            sources.len()
        ))),
    }
}

/// The elements and shape of `recipe`'s output over `sources`, every part checked to fit the
/// writer (so that the writer itself only fails on its input rows).
fn layout<E: Encode>(
    sources: &[Source<'_>],
    recipe: &Recipe,
    enc: &E,
) -> Result<(usize, Vec<usize>)> {
    Ok(match recipe.writer {
        Writer::Planes => {
            let s = one(sources, recipe)?;
            (planes::len(sources)?, vec![3, s.extent.1, s.extent.0])
        }
        Writer::Tiles(t) => {
            planes::check_tiles(sources, t)?;
            let len = planes::len(sources)?;
            let per = 3usize.saturating_mul(t).saturating_mul(t).max(1);
            (len, vec![len / per, 3, t, t])
        }
        Writer::PatchRows(p) => {
            let (len, gh, gw) = patch_rows::shape(one(sources, recipe)?, p, enc.is_codes())?;
            (len, vec![gh * gw, len / (gh * gw).max(1)])
        }
        Writer::HwcPatches {
            patch_size: ps,
            pad_to,
        } => {
            let s = one(sources, recipe)?;
            let len = hwc_patches::len(s, ps)?;
            let (rows, cols) = hwc_patches::grid(s, ps)?;
            let n = rows * cols;
            match pad_to {
                None => (len, vec![n, ps, ps, 3]),
                Some(p) if p >= n => {
                    let len = p
                        .checked_mul(ps * ps * 3)
                        .ok_or_else(|| KernelError::Limit("the feature's size overflows".into()))?;
                    (len, vec![p, ps, ps, 3])
                }
                Some(p) => {
                    let (w, h) = s.extent;
                    return Err(KernelError::InvalidArgument(format!(
                        "a {w}x{h} part has {n} patches of {ps}, more than pad_to = {p}"
                    )));
                }
            }
        }
    })
}

/// Every element of `tail` set to zero (a writer's padding past the image).
fn zero<T: Copy + Default>(tail: &mut [std::mem::MaybeUninit<T>]) {
    for d in tail {
        d.write(T::default());
    }
}

/// The encoders [`compose`] takes: [`Values`], [`Bf16Values`] and [`Codes`] (sealed: each
/// has its own output buffer).
pub trait ComposeEncoder: Encode + sealed::Sealed {}

impl ComposeEncoder for Values<'_> {}
impl ComposeEncoder for Bf16Values<'_> {}
impl ComposeEncoder for Codes {}

mod sealed {
    use super::alloc::{self, Store};
    use super::{Bf16Values, Codes, Encode, Values};
    use crate::error::Result;

    pub trait Sealed: Encode + Sized {
        /// An output buffer for `len` elements and how to store into it (float32 ones come
        /// from the reuse pool, [`alloc::give_f32`]).
        fn reserve(len: usize) -> Result<(Vec<Self::Out>, Store)> {
            Ok((alloc::reserve(len, "feature tensor")?, Store::Cached))
        }
    }

    impl Sealed for Values<'_> {
        fn reserve(len: usize) -> Result<(Vec<f32>, Store)> {
            alloc::reserve_f32(len, "feature tensor")
        }
    }

    impl Sealed for Bf16Values<'_> {}

    impl Sealed for Codes {}
}

#[cfg(all(test, feature = "decode"))]
mod fed_tests;
#[cfg(test)]
mod tests;
