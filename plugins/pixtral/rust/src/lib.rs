//! `sglang_mm_pixtral._native`: the Pixtral / Mistral 3 family kernel.
//!
//! One call from decoded RGB to the feature: the core's resampler (Pillow-exact bicubic or
//! torchvision's uint8 bicubic, row-parallel through the `Par` seam) to the size the Python
//! side computed, then rescale + normalize through one 256-entry table per channel, written
//! straight into channel-major (CHW) float32. A `u8` sample has only 256 possible results, so
//! the table reproduces the reference's float arithmetic exactly; it is also what the compact
//! (uint8 + table) feature ships: `process_compact` writes the resized samples instead.

use mm_kernels::resize::{resize_rgb, PassOrder, Resample};
use mm_kernels::{KernelError, Par, RgbView};
use mm_pyglue::{array_from_vec, rgb_view, to_pyerr};
use numpy::{PyArrayDyn, PyReadonlyArray3};
use pyo3::prelude::*;

/// `table[c][v]`: the normalized value of byte `v` in channel `c`.
pub type Table = [[f32; 256]; 3];

/// Whose arithmetic the normalize table reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// HF's numpy path (`PixtralImageProcessorPil`): `x = f32(f64(v) * (1/255))`, then
    /// `(x - f32(mean)) / f32(std)` in f32.
    Pil,
    /// HF's torchvision path (`PixtralImageProcessor`), rescale fused into normalize:
    /// `(f32(v) - f32(mean) * 255) / (f32(std) * 255)` in f32.
    AtenU8,
}

impl Mode {
    /// The mode and the resampler of a `resample` name.
    pub fn parse(name: &str) -> Result<(Self, Resample), KernelError> {
        match name {
            "pil" => Ok((Self::Pil, Resample::PilBicubic)),
            "aten_u8" => Ok((Self::AtenU8, Resample::AtenU8)),
            other => Err(KernelError::InvalidArgument(format!(
                "unknown resample {other:?} (expected pil or aten_u8)"
            ))),
        }
    }
}

/// The per-channel tables for `mean` / `std` under `mode`; refuses a zero or non-finite std.
pub fn tables(mean: [f64; 3], std: [f64; 3], mode: Mode) -> Result<Table, KernelError> {
    let mut out = [[0f32; 256]; 3];
    for c in 0..3 {
        let (m, s) = (mean[c] as f32, std[c] as f32);
        if !(s.is_finite() && s != 0.0 && m.is_finite()) {
            return Err(KernelError::InvalidArgument(format!(
                "channel {c}: mean {} and std {} must be finite, std non-zero",
                mean[c], std[c]
            )));
        }
        for (v, slot) in out[c].iter_mut().enumerate() {
            *slot = match mode {
                Mode::Pil => ((v as f64 * (1.0f64 / 255.0)) as f32 - m) / s,
                Mode::AtenU8 => (v as f32 - m * 255.0) / (s * 255.0),
            };
        }
    }
    Ok(out)
}

/// Resize `src` to `out_w x out_h` and lay it out as normalized `[3, out_h, out_w]` float32.
pub fn pixel_values(
    src: RgbView<'_>,
    out_w: usize,
    out_h: usize,
    resample: Resample,
    lut: &Table,
    par: &Par,
) -> Result<Vec<f32>, KernelError> {
    let resized = resize_rgb(src, out_w, out_h, resample, PassOrder::Pillow13, par)?;
    let plane = out_w * out_h;
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

/// The compact form of [`pixel_values`]: the resized samples as uint8 codes `[3, out_h, out_w]`
/// (channel-major), whose `lut[c][code]` are its values.
pub fn pixel_codes(
    src: RgbView<'_>,
    out_w: usize,
    out_h: usize,
    resample: Resample,
    par: &Par,
) -> Result<Vec<u8>, KernelError> {
    let resized = resize_rgb(src, out_w, out_h, resample, PassOrder::Pillow13, par)?;
    let plane = out_w * out_h;
    let mut out = vec![0u8; 3 * plane];
    let (r, rest) = out.split_at_mut(plane);
    let (g, b) = rest.split_at_mut(plane);
    for (i, px) in resized.data.chunks_exact(3).enumerate() {
        r[i] = px[0];
        g[i] = px[1];
        b[i] = px[2];
    }
    Ok(out)
}

/// The normalize tables as a `[3, 256]` float32 array (what a compact feature would carry).
#[pyfunction]
#[pyo3(signature = (image_mean, image_std, resample))]
fn normalize_table<'py>(
    py: Python<'py>,
    image_mean: [f64; 3],
    image_std: [f64; 3],
    resample: &str,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let (mode, _) = Mode::parse(resample).map_err(|e| to_pyerr(py, e))?;
    let lut = tables(image_mean, image_std, mode).map_err(|e| to_pyerr(py, e))?;
    array_from_vec(py, lut.iter().flatten().copied().collect(), &[3, 256])
}

/// `process(image, height, width, image_mean, image_std, resample, threads=1)`: float32
/// `[3, height, width]`, the GIL released while the pixels are worked.
#[pyfunction]
#[pyo3(signature = (image, height, width, image_mean, image_std, resample, threads=1))]
#[allow(clippy::too_many_arguments)]
fn process<'py>(
    py: Python<'py>,
    image: PyReadonlyArray3<'py, u8>,
    height: usize,
    width: usize,
    image_mean: [f64; 3],
    image_std: [f64; 3],
    resample: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let view = rgb_view(&image).map_err(|e| to_pyerr(py, e))?;
    let (mode, filter) = Mode::parse(resample).map_err(|e| to_pyerr(py, e))?;
    let lut = tables(image_mean, image_std, mode).map_err(|e| to_pyerr(py, e))?;
    let par = Par::new(threads);
    let values = py
        .detach(|| pixel_values(view, width, height, filter, &lut, &par))
        .map_err(|e| to_pyerr(py, e))?;
    array_from_vec(py, values, &[3, height, width])
}

/// `process_compact(image, height, width, resample, threads=1)`: uint8 codes
/// `[3, height, width]` (the compact form of `process`), the GIL released.
#[pyfunction]
#[pyo3(signature = (image, height, width, resample, threads=1))]
fn process_compact<'py>(
    py: Python<'py>,
    image: PyReadonlyArray3<'py, u8>,
    height: usize,
    width: usize,
    resample: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    let view = rgb_view(&image).map_err(|e| to_pyerr(py, e))?;
    let (_, filter) = Mode::parse(resample).map_err(|e| to_pyerr(py, e))?;
    let par = Par::new(threads);
    let codes = py
        .detach(|| pixel_codes(view, width, height, filter, &par))
        .map_err(|e| to_pyerr(py, e))?;
    array_from_vec(py, codes, &[3, height, width])
}

#[pymodule(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(process, m)?)?;
    m.add_function(wrap_pyfunction!(process_compact, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_table, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_std_is_refused() {
        let err = tables([0.0; 3], [1.0, 0.0, 1.0], Mode::Pil).unwrap_err();
        assert!(err.to_string().contains("channel 1"));
    }

    #[test]
    fn threads_do_not_change_bits() {
        let data: Vec<u8> = (0..37 * 23 * 3).map(|i| (i * 13 % 251) as u8).collect();
        let src = RgbView::new(37, 23, &data).unwrap();
        let lut = tables([0.5; 3], [0.25; 3], Mode::Pil).unwrap();
        let one = pixel_values(src, 32, 16, Resample::PilBicubic, &lut, &Par::new(1)).unwrap();
        let three = pixel_values(src, 32, 16, Resample::PilBicubic, &lut, &Par::new(3)).unwrap();
        assert_eq!(one, three);
        assert_eq!(one.len(), 3 * 32 * 16);
    }

    #[test]
    fn codes_through_the_table_are_the_values() {
        let data: Vec<u8> = (0..37 * 23 * 3).map(|i| (i * 13 % 251) as u8).collect();
        let src = RgbView::new(37, 23, &data).unwrap();
        for (mode, filter) in [
            (Mode::Pil, Resample::PilBicubic),
            (Mode::AtenU8, Resample::AtenU8),
        ] {
            let lut = tables([0.48, 0.46, 0.41], [0.27, 0.26, 0.28], mode).unwrap();
            let par = Par::new(2);
            let values = pixel_values(src, 32, 48, filter, &lut, &par).unwrap();
            let codes = pixel_codes(src, 32, 48, filter, &par).unwrap();
            let plane = 32 * 48;
            let looked_up: Vec<f32> = codes
                .iter()
                .enumerate()
                .map(|(i, &v)| lut[i / plane][usize::from(v)])
                .collect();
            assert!(looked_up == values, "{mode:?}");
        }
    }
}
