//! The `letterbox` family's kernel: what the core's composition cannot do, a resize *centred*
//! on a canvas (the core pads a part on the right and bottom only).
//!
//! `PIL.ImageOps.pad(image, (size, size), BICUBIC, color=fill)`: the image resized to the
//! `content` size the family's plan gives (Pillow-exact bicubic from `mm_kernels::resize`),
//! pasted at `offset` on a `size`² canvas of `fill`. The canvas then goes through the
//! `mm_kernels::features` pipeline like any core feature: one part that needs no resize, HF's
//! numpy rescale-and-normalize table, channel planes; the values, or the samples themselves as
//! the compact form's codes. The table is the core's own (`Table::new`), so the compact form
//! the core derives from the family's `Table.hf` expands to exactly these values.

use mm_kernels::features::{
    compose, Arith, Codes, ComposeEncoder, Composed, Part, Recipe, Resize, Table, Values, Writer,
};
use mm_kernels::resize::{resize_rgb, PassOrder, Resample};
use mm_kernels::{KernelError, Par, RgbImage, RgbView, MAX_IMAGE_PIXELS};
use mm_pyglue::{array_from_vec, rgb_view, to_pyerr};
use numpy::PyReadonlyArray3;
use pyo3::prelude::*;

/// Pillow 13's `Image.resize(..., BICUBIC)`.
const BICUBIC: Resize = Resize {
    resample: Resample::PilBicubic,
    order: PassOrder::Pillow13,
};

/// What one image becomes, from the family's plan.
struct Letterbox {
    /// Side of the square canvas.
    size: usize,
    /// `(width, height)` the image is resized to.
    content: (usize, usize),
    /// `(x, y)` of its top-left corner on the canvas.
    offset: (usize, usize),
    /// The canvas colour, RGB.
    fill: [u8; 3],
}

impl Letterbox {
    /// The `size`² canvas of `fill` with `image`, resized to `content`, pasted at `offset`.
    fn canvas(&self, image: RgbView<'_>, par: &Par) -> Result<RgbImage, KernelError> {
        let (s, (w, h), (x, y)) = (self.size, self.content, self.offset);
        let fits = |at: usize, len: usize| at.checked_add(len).is_some_and(|end| end <= s);
        let pixels = s.checked_mul(s).and_then(|n| u64::try_from(n).ok());
        if pixels.is_none_or(|n| n > MAX_IMAGE_PIXELS) {
            return Err(KernelError::InvalidArgument(format!(
                "a {s}x{s} canvas is over the cap of {MAX_IMAGE_PIXELS} pixels"
            )));
        }
        if w == 0 || h == 0 || !fits(x, w) || !fits(y, h) {
            return Err(KernelError::InvalidArgument(format!(
                "a {w}x{h} image at ({x}, {y}) does not fit a {s}x{s} canvas"
            )));
        }
        let resized = resize_rgb(image, w, h, BICUBIC.resample, BICUBIC.order, par)?;
        let mut data = self.fill.repeat(s * s);
        for (row, pixels) in resized.data.chunks_exact(w * 3).enumerate() {
            let at = ((y + row) * s + x) * 3;
            data[at..at + w * 3].copy_from_slice(pixels);
        }
        RgbImage::new(s, s, data)
    }

    /// The canvas through `enc` as `[3, size, size]` channel planes.
    fn compose<E: ComposeEncoder>(
        &self,
        image: RgbView<'_>,
        enc: &E,
        par: &Par,
    ) -> Result<Composed<E::Out>, KernelError> {
        let canvas = self.canvas(image, par)?;
        let whole = [Part::resized(self.size, self.size)];
        let recipe = Recipe {
            resize: BICUBIC,
            writer: Writer::Planes,
        };
        compose(canvas.view(), &whole, &recipe, enc, par)
    }
}

/// `letterbox(image, size, content, offset, fill, mean, std, *, codes, threads)`: float32
/// `[3, size, size]`, or (`codes`) its uint8 samples; the GIL is released while it runs.
#[pyfunction]
#[pyo3(signature = (image, size, content, offset, fill, mean, std, *, codes, threads))]
#[allow(clippy::too_many_arguments)]
fn letterbox<'py>(
    py: Python<'py>,
    image: PyReadonlyArray3<'py, u8>,
    size: usize,
    content: (usize, usize),
    offset: (usize, usize),
    fill: [u8; 3],
    mean: [f64; 3],
    std: [f64; 3],
    codes: bool,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let view = rgb_view(&image).map_err(|e| to_pyerr(py, e))?;
    let table = Table::new(mean, std, 1.0 / 255.0, Arith::Numpy).map_err(|e| to_pyerr(py, e))?;
    let job = Letterbox {
        size,
        content,
        offset,
        fill,
    };
    let par = Par::new(threads);
    if codes {
        let out = py
            .detach(|| job.compose(view, &Codes, &par))
            .map_err(|e| to_pyerr(py, e))?;
        Ok(array_from_vec(py, out.data, &out.shape)?.into_any())
    } else {
        let out = py
            .detach(|| job.compose(view, &Values(&table), &par))
            .map_err(|e| to_pyerr(py, e))?;
        Ok(array_from_vec(py, out.data, &out.shape)?.into_any())
    }
}

#[pymodule(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(letterbox, m)?)?;
    Ok(())
}
