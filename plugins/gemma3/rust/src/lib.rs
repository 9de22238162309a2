//! The Gemma 3 family's kernel: one call from a decoded RGB image to its `pixel_values`.
//!
//! For the whole image and then each pan-and-scan crop (a rectangle of the original pixels,
//! cut before resizing as HF does): bilinear resize to `size x size` with the core's
//! `pil_bilinear` (Pillow 13) or `aten_u8_bilinear` (torchvision uint8) resampler, row-parallel
//! through the core's `Par` seam, then a per-channel 256-entry float32 table written straight
//! into channel-major order. The table is built by the caller with the reference's own float
//! arithmetic, so the lookup is bit-exact with it; being a table on uint8 it is also what the
//! compact (uint8 + table) feature carries: `process_compact` writes the resized samples in the
//! same order instead.

use mm_kernels::resize::{PassOrder, Resample, ResizePlan};
use mm_kernels::{KernelError, Par, RgbView};
use mm_pyglue::{array_from_vec, rgb_view, to_pyerr};
use numpy::{PyArrayDyn, PyReadonlyArray2, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// A crop rectangle `(x, y, w, h)` in pixels of the source image.
type Rect = (usize, usize, usize, usize);

/// The pixels of `rect`, tightly packed (the whole view when it covers the image).
fn cut<'a, 'b: 'a>(
    src: RgbView<'b>,
    rect: Rect,
    buf: &'a mut Vec<u8>,
) -> Result<RgbView<'a>, KernelError> {
    let (x, y, w, h) = rect;
    let fits = x.checked_add(w).is_some_and(|r| r <= src.width)
        && y.checked_add(h).is_some_and(|b| b <= src.height);
    if w == 0 || h == 0 || !fits {
        return Err(KernelError::InvalidArgument(format!(
            "crop {w}x{h} at ({x}, {y}) does not fit a {}x{} image",
            src.width, src.height
        )));
    }
    if (x, y, w, h) == (0, 0, src.width, src.height) {
        return Ok(src);
    }
    let stride = src.width * 3;
    buf.clear();
    for row in y..y + h {
        buf.extend_from_slice(&src.data[row * stride + x * 3..][..w * 3]);
    }
    RgbView::new(w, h, buf)
}

/// What one resized uint8 sample of channel `c` becomes in the output: a float32 through
/// the normalize table, or (the compact form) the sample itself as its code.
trait Encode: Sync {
    type Out: Copy + Default;
    fn encode(&self, c: usize, v: u8) -> Self::Out;
}

impl Encode for [[f32; 256]; 3] {
    type Out = f32;
    #[inline(always)]
    fn encode(&self, c: usize, v: u8) -> f32 {
        self[c][usize::from(v)]
    }
}

/// The compact form's encoding: each sample is its own code.
struct Codes;

impl Encode for Codes {
    type Out = u8;
    #[inline(always)]
    fn encode(&self, _c: usize, v: u8) -> u8 {
        v
    }
}

/// Every rectangle resized to `size²`, each sample written through `enc`, as
/// `[n, 3, size, size]` (channel-major).
fn process_rects<E: Encode>(
    src: RgbView<'_>,
    rects: &[Rect],
    size: usize,
    resample: Resample,
    enc: &E,
    par: &Par,
) -> Result<Vec<E::Out>, KernelError> {
    let plane = size * size;
    let mut out = vec![E::Out::default(); rects.len() * 3 * plane];
    let mut buf = Vec::new();
    for (rect, dst) in rects.iter().zip(out.chunks_exact_mut(3 * plane)) {
        let view = cut(src, *rect, &mut buf)?;
        let plan = ResizePlan::new(
            view.width,
            view.height,
            size,
            size,
            resample,
            PassOrder::Pillow13,
        )?;
        let resized = plan.run(view, par)?;
        let (r, rest) = dst.split_at_mut(plane);
        let (g, b) = rest.split_at_mut(plane);
        for (i, px) in resized.data.chunks_exact(3).enumerate() {
            r[i] = enc.encode(0, px[0]);
            g[i] = enc.encode(1, px[1]);
            b[i] = enc.encode(2, px[2]);
        }
    }
    Ok(out)
}

fn parse_resample(name: &str) -> Result<Resample, KernelError> {
    match name {
        "pil" => Ok(Resample::PilBilinear),
        "aten_u8" => Ok(Resample::AtenU8Bilinear),
        other => Err(KernelError::InvalidArgument(format!(
            "unknown resample {other:?} (expected pil or aten_u8)"
        ))),
    }
}

/// `rects` (`[n, 4]` int64 of `(x, y, w, h)`, n >= 1) as crop rectangles.
fn parse_rects(rects: &PyReadonlyArray2<'_, i64>) -> Result<Vec<Rect>, KernelError> {
    let bad = |what: &str| KernelError::InvalidArgument(what.to_string());
    let r = rects
        .as_slice()
        .map_err(|_| bad("rects must be C-contiguous"))?;
    if rects.shape().len() != 2 || rects.shape()[1] != 4 || r.is_empty() {
        return Err(bad("rects must have shape [n, 4] with n >= 1"));
    }
    let mut list = Vec::with_capacity(r.len() / 4);
    for q in r.chunks_exact(4) {
        let v: Vec<usize> = q
            .iter()
            .map(|&v| usize::try_from(v))
            .collect::<Result<_, _>>()
            .map_err(|_| bad("crop rectangles must be non-negative"))?;
        list.push((v[0], v[1], v[2], v[3]));
    }
    Ok(list)
}

/// `process(image, rects, size, table, resample, threads=1) -> float32 [n, 3, size, size]`:
/// `rects` is `[n, 4]` of `(x, y, w, h)`, `table` is `[3, 256]`; the GIL is released.
#[pyfunction]
#[pyo3(signature = (image, rects, size, table, resample, threads=1))]
fn process<'py>(
    py: Python<'py>,
    image: PyReadonlyArray3<'py, u8>,
    rects: PyReadonlyArray2<'py, i64>,
    size: usize,
    table: PyReadonlyArray2<'py, f32>,
    resample: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let err = |e| to_pyerr(py, e);
    let view = rgb_view(&image).map_err(err)?;
    let resample = parse_resample(resample).map_err(err)?;
    let bad = |what: &str| err(KernelError::InvalidArgument(what.to_string()));
    let t = table
        .as_slice()
        .map_err(|_| bad("table must be C-contiguous"))?;
    if table.shape() != [3, 256] {
        return Err(bad("table must have shape [3, 256]"));
    }
    let mut lut = [[0f32; 256]; 3];
    for (c, row) in lut.iter_mut().enumerate() {
        row.copy_from_slice(&t[c * 256..][..256]);
    }
    let list = parse_rects(&rects).map_err(err)?;
    let par = Par::new(threads);
    let n = list.len();
    let values = py
        .detach(|| process_rects(view, &list, size, resample, &lut, &par))
        .map_err(err)?;
    array_from_vec(py, values, &[n, 3, size, size])
}

/// `process_compact(image, rects, size, resample, threads=1) -> uint8 [n, 3, size, size]`: the
/// compact form of `process` (its values are `table[c][code]`); the GIL is released.
#[pyfunction]
#[pyo3(signature = (image, rects, size, resample, threads=1))]
fn process_compact<'py>(
    py: Python<'py>,
    image: PyReadonlyArray3<'py, u8>,
    rects: PyReadonlyArray2<'py, i64>,
    size: usize,
    resample: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    let err = |e| to_pyerr(py, e);
    let view = rgb_view(&image).map_err(err)?;
    let resample = parse_resample(resample).map_err(err)?;
    let list = parse_rects(&rects).map_err(err)?;
    let par = Par::new(threads);
    let n = list.len();
    let codes = py
        .detach(|| process_rects(view, &list, size, resample, &Codes, &par))
        .map_err(err)?;
    array_from_vec(py, codes, &[n, 3, size, size])
}

#[pymodule(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(process, m)?)?;
    m.add_function(wrap_pyfunction!(process_compact, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crops_cut_the_right_pixels_and_refuse_what_does_not_fit() {
        let data: Vec<u8> = (0..4 * 3 * 3).map(|v| v as u8).collect();
        let src = RgbView::new(4, 3, &data).unwrap();
        let mut buf = Vec::new();
        let c = cut(src, (1, 1, 2, 2), &mut buf).unwrap();
        assert_eq!(c.data, &[15, 16, 17, 18, 19, 20, 27, 28, 29, 30, 31, 32]);
        for rect in [
            (3, 0, 2, 1),
            (0, 0, 0, 1),
            (0, 2, 1, 2),
            (usize::MAX, 0, 2, 1),
        ] {
            assert!(cut(src, rect, &mut buf).is_err(), "{rect:?}");
        }
    }

    /// The codes looked up in the table are the values, for both resamplers, whole and cropped.
    #[test]
    fn codes_through_the_table_are_the_values() {
        let data: Vec<u8> = (0..53 * 29 * 3).map(|i| (i * 29 % 253) as u8).collect();
        let src = RgbView::new(53, 29, &data).unwrap();
        let mut lut = [[0f32; 256]; 3];
        for (c, row) in lut.iter_mut().enumerate() {
            for (v, slot) in row.iter_mut().enumerate() {
                *slot = (v as f32 - 100.0) / (c as f32 + 7.0);
            }
        }
        let rects = [(0, 0, 53, 29), (10, 3, 30, 26)];
        for resample in [Resample::PilBilinear, Resample::AtenU8Bilinear] {
            let par = Par::new(2);
            let values = process_rects(src, &rects, 16, resample, &lut, &par).unwrap();
            let codes = process_rects(src, &rects, 16, resample, &Codes, &par).unwrap();
            let plane = 16 * 16;
            let looked_up: Vec<f32> = codes
                .chunks_exact(plane)
                .enumerate()
                .flat_map(|(i, p)| p.iter().map(move |&v| lut[i % 3][usize::from(v)]))
                .collect();
            assert!(looked_up == values, "{resample:?}");
        }
    }
}
