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
mod hwc_patches;
mod parts;
mod patch_rows;
mod planes;
mod simd;
mod table;

pub use encode::{Bf16Values, Codes, Encode, Scatter, Values};
pub use hwc_patches::hwc_patch_row;
pub use parts::{Fill, Part, Rect, Resize};
pub use patch_rows::Patching;
pub use table::{bf16_rne, Arith, Backend, Bf16Table, Filter, Lanes, Table};

use crate::error::{KernelError, Result};
use crate::image::RgbView;
use crate::par::Par;
use parts::Source;

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
    /// One part as `ps x ps` patches, channels last: `[rows * cols, ps, ps, 3]`, padded.
    HwcPatches(usize),
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
/// [`KernelError::InvalidArgument`]; an output too large to allocate a [`KernelError::Limit`].
pub fn compose<E: ComposeEncoder>(
    image: RgbView<'_>,
    parts: &[Part],
    recipe: &Recipe,
    enc: &E,
    par: &Par,
) -> Result<Composed<E::Out>> {
    if parts.is_empty() {
        return Err(KernelError::InvalidArgument(
            "a feature needs at least one part".into(),
        ));
    }
    let sources: Vec<Source<'_>> = parts
        .iter()
        .map(|p| Source::new(image, p, recipe.resize))
        .collect::<Result<_>>()?;
    let one = || -> Result<&Source<'_>> {
        match &sources[..] {
            [s] => Ok(s),
            _ => Err(KernelError::InvalidArgument(format!(
                "the {:?} writer takes one part, got {}",
                recipe.writer,
                sources.len()
            ))),
        }
    };
    let (len, shape) = match recipe.writer {
        Writer::Planes => {
            let s = one()?;
            (planes::len(&sources)?, vec![3, s.extent.1, s.extent.0])
        }
        Writer::Tiles(t) => {
            let len = planes::len(&sources)?;
            let per = 3usize.saturating_mul(t).saturating_mul(t).max(1);
            (len, vec![len / per, 3, t, t])
        }
        Writer::PatchRows(p) => {
            let (len, gh, gw) = patch_rows::shape(one()?, p, enc.is_codes())?;
            (len, vec![gh * gw, len / (gh * gw).max(1)])
        }
        Writer::HwcPatches(ps) => {
            let s = one()?;
            let len = hwc_patches::len(s, ps)?;
            let (rows, cols) = hwc_patches::grid(s, ps)?;
            (len, vec![rows * cols, ps, ps, 3])
        }
    };
    let (mut out, store) = E::reserve(len)?;
    let spare = &mut out.spare_capacity_mut()[..len];
    match recipe.writer {
        Writer::Planes => planes::write(&sources, None, enc, par, spare)?,
        Writer::Tiles(t) => planes::write(&sources, Some(t), enc, par, spare)?,
        Writer::PatchRows(p) => enc.patch_rows(one()?, p, par, spare, store)?,
        Writer::HwcPatches(ps) => hwc_patches::write(one()?, ps, enc, par, spare)?,
    }
    // SAFETY: `len <= capacity` (reserved above), and the writer returned Ok, which means it
    // wrote every one of the `len` elements (each writer's contract).
    unsafe { out.set_len(len) };
    Ok(Composed { data: out, shape })
}

/// The encoders [`compose`] takes: [`Values`], [`Bf16Values`] and [`Codes`] (sealed: each
/// has its own output buffer and patch-row path).
pub trait ComposeEncoder: Encode + sealed::Sealed {}

impl ComposeEncoder for Values<'_> {}
impl ComposeEncoder for Bf16Values<'_> {}
impl ComposeEncoder for Codes {}

mod sealed {
    use std::mem::MaybeUninit;

    use super::alloc::{self, Store};
    use super::parts::Source;
    use super::{patch_rows, Bf16Values, Codes, Encode, Patching, Values};
    use crate::error::Result;
    use crate::par::Par;

    pub trait Sealed: Encode + Sized {
        /// An output buffer for `len` elements and how to store into it (float32 ones come
        /// from the reuse pool, [`alloc::give_f32`]).
        fn reserve(len: usize) -> Result<(Vec<Self::Out>, Store)> {
            Ok((alloc::reserve(len, "feature tensor")?, Store::Cached))
        }

        /// The patch-row writer of this encoder (the compact form has its own, frames once).
        fn patch_rows(
            &self,
            src: &Source<'_>,
            p: Patching,
            par: &Par,
            out: &mut [MaybeUninit<Self::Out>],
            store: Store,
        ) -> Result<()> {
            patch_rows::write(src, p, self, par, out, store)
        }
    }

    impl Sealed for Values<'_> {
        fn reserve(len: usize) -> Result<(Vec<f32>, Store)> {
            alloc::reserve_f32(len, "feature tensor")
        }
    }

    impl Sealed for Bf16Values<'_> {}

    impl Sealed for Codes {
        fn patch_rows(
            &self,
            src: &Source<'_>,
            p: Patching,
            par: &Par,
            out: &mut [MaybeUninit<u8>],
            _store: Store,
        ) -> Result<()> {
            patch_rows::write_codes(src, p, par, out)
        }
    }
}

#[cfg(test)]
mod tests;
