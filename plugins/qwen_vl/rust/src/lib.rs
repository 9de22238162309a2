//! `sglang_mm_qwen_vl._native`: the Qwen-VL family kernel. Argument parsing and array wrapping
//! stay here; the pixel work runs in [`process`] with the GIL released.

pub mod fused;
mod hugepages;
pub mod normalize;
pub mod patchify;
mod pool;
pub mod process;
pub mod smart;

use mm_kernels::Par;
use mm_pyglue::{rgb_view, to_pyerr};
use numpy::ndarray::ArrayView2;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray3};
use pyo3::prelude::*;

use crate::process::{Config, Settings};
use crate::smart::{Bounds, Variant};

/// A validated kernel configuration; built once per pipeline, shared by every thread.
#[pyclass(frozen, module = "sglang_mm_qwen_vl._native")]
struct Processor {
    cfg: Config,
}

#[pymethods]
impl Processor {
    #[new]
    #[pyo3(signature = (
        *, patch_size, merge_size, temporal_patch_size, min_pixels, max_pixels, image_mean,
        image_std, resample, smart_resize, pil_pass_order
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        patch_size: usize,
        merge_size: usize,
        temporal_patch_size: usize,
        min_pixels: u64,
        max_pixels: u64,
        image_mean: [f64; 3],
        image_std: [f64; 3],
        resample: &str,
        smart_resize: &str,
        pil_pass_order: &str,
    ) -> PyResult<Self> {
        let settings = Settings {
            patch_size,
            merge_size,
            temporal_patch_size,
            min_pixels,
            max_pixels,
            mean: image_mean,
            std: image_std,
            resample,
            smart_resize,
            pass_order: pil_pass_order,
        };
        let cfg = Config::new(&settings).map_err(|e| to_pyerr(py, e))?;
        Ok(Self { cfg })
    }

    /// `(pixel_values [gh*gw, 3*tps*ps*ps] float32, (gh, gw), (height', width'))`.
    #[pyo3(signature = (image, threads=1))]
    #[allow(clippy::type_complexity)]
    fn process<'py>(
        &self,
        py: Python<'py>,
        image: PyReadonlyArray3<'py, u8>,
        threads: usize,
    ) -> PyResult<(Bound<'py, PyArray2<f32>>, (usize, usize), (usize, usize))> {
        let view = rgb_view(&image).map_err(|e| to_pyerr(py, e))?;
        let par = Par::new(threads);
        let cfg = &self.cfg;
        let out = py
            .detach(|| process::process(cfg, view, &par))
            .map_err(|e| to_pyerr(py, e))?;
        let rows = out.grid_h * out.grid_w;
        let values = owned_array(py, out.values, rows, out.row_len)?;
        Ok((values, (out.grid_h, out.grid_w), (out.height, out.width)))
    }

    /// `(codes [gh*gw, 3*ps*ps] uint8, (gh, gw), (height', width'))`: the compact form of
    /// `process` (its values are `table()[c][code]`, each frame repeated).
    #[pyo3(signature = (image, threads=1))]
    #[allow(clippy::type_complexity)]
    fn process_compact<'py>(
        &self,
        py: Python<'py>,
        image: PyReadonlyArray3<'py, u8>,
        threads: usize,
    ) -> PyResult<(Bound<'py, PyArray2<u8>>, (usize, usize), (usize, usize))> {
        let view = rgb_view(&image).map_err(|e| to_pyerr(py, e))?;
        let par = Par::new(threads);
        let cfg = &self.cfg;
        let out = py
            .detach(|| process::process_codes(cfg, view, &par))
            .map_err(|e| to_pyerr(py, e))?;
        let rows = out.grid_h * out.grid_w;
        let codes = PyArray1::from_vec(py, out.codes).reshape([rows, out.row_len])?;
        Ok((codes, (out.grid_h, out.grid_w), (out.height, out.width)))
    }

    /// The normalize table `[3, 256]` float32: `table[c][v]` is sample `v` of channel `c`.
    fn table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let rows: Vec<Vec<f32>> = self.cfg.norm.table.iter().map(|t| t.to_vec()).collect();
        Ok(PyArray2::from_vec2(py, &rows)?)
    }

    /// The resized `(height', width')` of a `height x width` image (smart_resize only).
    fn target_size(&self, py: Python<'_>, height: u64, width: u64) -> PyResult<(u64, u64)> {
        process::target_size(&self.cfg, height, width).map_err(|e| to_pyerr(py, e))
    }
}

/// The buffer behind a `pixel_values` array; handed to the pool when numpy lets go of it.
#[pyclass(frozen, module = "sglang_mm_qwen_vl._native")]
struct Owned {
    values: Vec<f32>,
}

impl Drop for Owned {
    fn drop(&mut self) {
        pool::give(std::mem::take(&mut self.values));
    }
}

/// `values` as a `[rows, cols]` numpy array, without copying.
fn owned_array(
    py: Python<'_>,
    values: Vec<f32>,
    rows: usize,
    cols: usize,
) -> PyResult<Bound<'_, PyArray2<f32>>> {
    if rows.checked_mul(cols) != Some(values.len()) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{} values do not make a {rows}x{cols} array",
            values.len()
        )));
    }
    let mut values = values;
    // Taken mutably before the move (which leaves the heap buffer where it is): numpy may write
    // through it.
    let ptr = values.as_mut_ptr();
    let owner = Bound::new(py, Owned { values })?;
    // SAFETY: `ptr` points at `rows * cols` initialised floats (checked above), owned by
    // `owner`, which never touches nor reallocates them until it is dropped; the array keeps
    // `owner` alive as its base object.
    let view = unsafe { ArrayView2::from_shape_ptr((rows, cols), ptr.cast_const()) };
    Ok(unsafe { PyArray2::borrow_from_array(&view, owner.into_any()) })
}

/// `smart_resize(height, width, factor, min_pixels, max_pixels, variant)` -> `(h', w')`.
#[pyfunction]
#[pyo3(signature = (height, width, factor, min_pixels, max_pixels, variant="hf"))]
fn smart_resize(
    py: Python<'_>,
    height: u64,
    width: u64,
    factor: u64,
    min_pixels: u64,
    max_pixels: u64,
    variant: &str,
) -> PyResult<(u64, u64)> {
    let variant = Variant::parse(variant).map_err(|e| to_pyerr(py, e))?;
    let bounds = Bounds {
        factor,
        min_pixels,
        max_pixels,
        variant,
    };
    smart::smart_resize(height, width, &bounds).map_err(|e| to_pyerr(py, e))
}

#[pymodule(name = "_native")]
fn sglang_mm_qwen_vl_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Processor>()?;
    m.add_function(wrap_pyfunction!(smart_resize, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
