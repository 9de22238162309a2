//! The `square` family's kernel: one fused call from decoded RGB to the feature.
//!
//! Resize (Pillow-exact bicubic from `mm-kernels`, row-parallel through its `Par` seam), then
//! normalize through a 256-entry table per channel, written straight into channel-major
//! (CHW) order. The table holds exactly what the float32 reference computes per value,
//! `(v * (1/255) - mean) / std`, so the feature is bit-exact with it.

use mm_kernels::resize::{resize_rgb, PassOrder, Resample};
use mm_kernels::{KernelError, Par};
use mm_pyglue::{array_from_vec, rgb_view, to_pyerr};
use numpy::{PyArrayDyn, PyReadonlyArray3};
use pyo3::prelude::*;

/// Per channel, the normalized float32 of each of the 256 byte values.
fn tables(mean: [f32; 3], std: [f32; 3]) -> Result<[[f32; 256]; 3], KernelError> {
    let mut lut = [[0f32; 256]; 3];
    for c in 0..3 {
        if !(std[c].is_finite() && std[c] != 0.0 && mean[c].is_finite()) {
            return Err(KernelError::InvalidArgument(format!(
                "channel {c}: mean {} and std {} must be finite, std non-zero",
                mean[c], std[c]
            )));
        }
        for (v, slot) in lut[c].iter_mut().enumerate() {
            *slot = (v as f32 * (1.0f32 / 255.0) - mean[c]) / std[c];
        }
    }
    Ok(lut)
}

/// Resize to `size`², normalize, and lay out as `[3, size, size]` float32 (row-major).
fn square(
    src: mm_kernels::RgbView<'_>,
    size: usize,
    lut: &[[f32; 256]; 3],
    par: &Par,
) -> Result<Vec<f32>, KernelError> {
    let resized = resize_rgb(
        src,
        size,
        size,
        Resample::PilBicubic,
        PassOrder::Pillow13,
        par,
    )?;
    let plane = size * size;
    let mut out = vec![0f32; 3 * plane];
    let (r, rest) = out.split_at_mut(plane);
    let (g, b) = rest.split_at_mut(plane);
    for (i, px) in resized.data.chunks_exact(3).enumerate() {
        r[i] = lut[0][px[0] as usize];
        g[i] = lut[1][px[1] as usize];
        b[i] = lut[2][px[2] as usize];
    }
    Ok(out)
}

/// `process(image, size, mean, std, threads=1) -> float32 [3, size, size]`, GIL released.
#[pyfunction]
#[pyo3(signature = (image, size, mean, std, threads=1))]
fn process<'py>(
    py: Python<'py>,
    image: PyReadonlyArray3<'py, u8>,
    size: usize,
    mean: [f32; 3],
    std: [f32; 3],
    threads: usize,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let view = rgb_view(&image).map_err(|e| to_pyerr(py, e))?;
    let lut = tables(mean, std).map_err(|e| to_pyerr(py, e))?;
    let par = Par::new(threads);
    let values = py
        .detach(|| square(view, size, &lut, &par))
        .map_err(|e| to_pyerr(py, e))?;
    array_from_vec(py, values, &[3, size, size])
}

#[pymodule(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(process, m)?)?;
    Ok(())
}
