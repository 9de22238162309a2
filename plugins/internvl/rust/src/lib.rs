//! `sglang_mm_internvl._native`: the InternVL family kernel. Argument parsing and array
//! wrapping stay here; the pixel work runs in [`tiles::process`] with the GIL released.

pub mod normalize;
pub mod tiles;

use mm_kernels::resize::{PassOrder, Resample};
use mm_kernels::{KernelError, Par};
use mm_pyglue::{array_from_vec, rgb_view, to_pyerr};
use numpy::{PyArrayDyn, PyReadonlyArray3};
use pyo3::prelude::*;

use crate::normalize::{table, Mode, Table};
use crate::tiles::{Settings, Tiling};

/// A validated kernel configuration; built once per pipeline, shared by every thread.
#[pyclass(frozen, module = "sglang_mm_internvl._native")]
struct Processor {
    tile: usize,
    resample: Resample,
    order: PassOrder,
    table: Box<Table>,
}

#[pymethods]
impl Processor {
    #[new]
    #[pyo3(signature = (*, tile_size, image_mean, image_std, resample, pil_pass_order))]
    fn new(
        py: Python<'_>,
        tile_size: usize,
        image_mean: [f64; 3],
        image_std: [f64; 3],
        resample: &str,
        pil_pass_order: &str,
    ) -> PyResult<Self> {
        let (resample, mode) = match resample {
            "pil" => (Resample::PilBicubic, Mode::Pil),
            "aten_u8" => (Resample::AtenU8, Mode::AtenU8),
            other => {
                return Err(to_pyerr(
                    py,
                    KernelError::InvalidArgument(format!(
                        "unknown resample {other:?} (expected pil or aten_u8)"
                    )),
                ))
            }
        };
        if tile_size == 0 {
            let e = KernelError::InvalidArgument("tile_size must be positive".to_string());
            return Err(to_pyerr(py, e));
        }
        let order = PassOrder::parse(pil_pass_order).map_err(|e| to_pyerr(py, e))?;
        let table = table(image_mean, image_std, mode).map_err(|e| to_pyerr(py, e))?;
        Ok(Self {
            tile: tile_size,
            resample,
            order,
            table: Box::new(table),
        })
    }

    /// `pixel_values [cols * rows + thumbnail, 3, T, T]` float32 for an RGB `[h, w, 3]` image.
    #[pyo3(signature = (image, cols, rows, thumbnail, threads=1))]
    fn process<'py>(
        &self,
        py: Python<'py>,
        image: PyReadonlyArray3<'py, u8>,
        cols: usize,
        rows: usize,
        thumbnail: bool,
        threads: usize,
    ) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let tiling = Tiling {
            cols,
            rows,
            thumbnail,
        };
        self.run(py, &image, tiling, threads, tiles::process)
    }

    /// The compact form of `process`: uint8 codes `[cols * rows + thumbnail, 3, T, T]` whose
    /// `table()[c][code]` are its values.
    #[pyo3(signature = (image, cols, rows, thumbnail, threads=1))]
    fn process_compact<'py>(
        &self,
        py: Python<'py>,
        image: PyReadonlyArray3<'py, u8>,
        cols: usize,
        rows: usize,
        thumbnail: bool,
        threads: usize,
    ) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
        let tiling = Tiling {
            cols,
            rows,
            thumbnail,
        };
        self.run(py, &image, tiling, threads, tiles::process_codes)
    }

    /// The normalize table `[3, 256]` float32: `table[c][v]` is sample `v` of channel `c`.
    fn table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let flat: Vec<f32> = self.table.iter().flatten().copied().collect();
        array_from_vec(py, flat, &[3, 256])
    }
}

impl Processor {
    /// One kernel (`tiles::process` or `tiles::process_codes`) over `image` with the GIL
    /// released, its output as a `[tiles, 3, T, T]` array.
    fn run<'py, T: numpy::Element + Send>(
        &self,
        py: Python<'py>,
        image: &PyReadonlyArray3<'py, u8>,
        tiling: Tiling,
        threads: usize,
        kernel: impl FnOnce(
                mm_kernels::RgbView<'_>,
                Tiling,
                &Settings<'_>,
                &Par,
            ) -> Result<Vec<T>, KernelError>
            + Send,
    ) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
        let view = rgb_view(image).map_err(|e| to_pyerr(py, e))?;
        let settings = Settings {
            tile: self.tile,
            resample: self.resample,
            order: self.order,
            table: &self.table,
        };
        let par = Par::new(threads);
        let out = py
            .detach(|| kernel(view, tiling, &settings, &par))
            .map_err(|e| to_pyerr(py, e))?;
        let t = self.tile;
        array_from_vec(py, out, &[tiling.tiles(), 3, t, t])
    }
}

#[pymodule(name = "_native")]
fn sglang_mm_internvl_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Processor>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
