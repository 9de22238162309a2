//! `sglang_mm_qwen_vl._native`: the Qwen-VL family kernel. Argument parsing and array wrapping
//! stay here; the pixel work runs in [`process`] with the GIL released.

mod hugepages;
pub mod normalize;
pub mod patchify;
pub mod process;
pub mod smart;

use mm_kernels::Par;
use mm_pyglue::{array_from_vec, rgb_view, to_pyerr};
use numpy::{PyArrayDyn, PyReadonlyArray3};
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
    ) -> PyResult<(Bound<'py, PyArrayDyn<f32>>, (usize, usize), (usize, usize))> {
        let view = rgb_view(&image).map_err(|e| to_pyerr(py, e))?;
        let par = Par::new(threads);
        let cfg = &self.cfg;
        let out = py
            .detach(|| process::process(cfg, view, &par))
            .map_err(|e| to_pyerr(py, e))?;
        let rows = out.grid_h * out.grid_w;
        let values = array_from_vec(py, out.values, &[rows, out.row_len])?;
        Ok((values, (out.grid_h, out.grid_w), (out.height, out.width)))
    }

    /// The resized `(height', width')` of a `height x width` image (smart_resize only).
    fn target_size(&self, py: Python<'_>, height: u64, width: u64) -> PyResult<(u64, u64)> {
        process::target_size(&self.cfg, height, width).map_err(|e| to_pyerr(py, e))
    }
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

/// Whether this build can spawn kernel threads (the `parallel` feature of mm-kernels).
#[pyfunction]
fn parallel_enabled() -> bool {
    Par::new(2).threads() > 1
}

#[pymodule(name = "_native")]
fn sglang_mm_qwen_vl_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Processor>()?;
    m.add_function(wrap_pyfunction!(smart_resize, m)?)?;
    m.add_function(wrap_pyfunction!(parallel_enabled, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
