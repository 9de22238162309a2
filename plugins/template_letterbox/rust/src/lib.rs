//! The `letterbox` family's kernel: the template of a family with a Rust kernel of its own.
//!
//! `PIL.ImageOps.pad(image, (size, size), BICUBIC, color=fill)`: the image resized to the
//! `content` size the family's plan gives (Pillow-exact bicubic), pasted at `offset` on a
//! `size`² canvas of `fill`, through the `mm_kernels::features` pipeline: one part on a canvas
//! ([`Part::on_canvas`]), HF's numpy rescale-and-normalize table, channel planes; the values,
//! or the samples themselves as the compact form's codes. The core composes the same feature
//! from Python too; a kernel of your own earns its place when it does what `compose` cannot
//! (Inkling's crate decodes and patchifies in one streamed pass). The table is the core's own
//! (`Table::new`), so the compact form the core derives from the family's `Table.hf` expands
//! to exactly these values.

use mm_kernels::features::{
    compose, Arith, Codes, ComposeEncoder, Composed, Part, Recipe, Resize, Table, Values, Writer,
};
use mm_kernels::resize::{PassOrder, Resample};
use mm_kernels::{KernelError, Par, RgbView};
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
    /// The canvas through `enc` as `[3, size, size]` channel planes; a content that does not
    /// fit the canvas at its offset is an [`KernelError::InvalidArgument`].
    fn compose<E: ComposeEncoder>(
        &self,
        image: RgbView<'_>,
        enc: &E,
        par: &Par,
    ) -> Result<Composed<E::Out>, KernelError> {
        let (w, h) = self.content;
        let part = Part::on_canvas(w, h, (self.size, self.size), self.fill, self.offset);
        let recipe = Recipe {
            resize: BICUBIC,
            writer: Writer::Planes,
        };
        compose(image, &[part], &recipe, enc, par)
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
