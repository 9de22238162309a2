//! The Gemma 3 family's kernel: one call from a decoded RGB image to its `pixel_values`.
//!
//! For the whole image and then each pan-and-scan crop (a rectangle of the original pixels,
//! cut before resizing as HF does): bilinear resize to `size x size` with the core's
//! `pil_bilinear` (Pillow 13) or `aten_u8_bilinear` (torchvision uint8) resampler, row-parallel
//! through the core's `Par` seam, then a per-channel 256-entry float32 table written straight
//! into channel-major order. The table is built by the caller with the reference's own float
//! arithmetic, so the lookup is bit-exact with it; being a table on uint8 it is also what a
//! compact (uint8 + table) feature would carry.

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

/// Every rectangle resized to `size²`, normalized through `lut`, as `[n, 3, size, size]`.
fn process_rects(
    src: RgbView<'_>,
    rects: &[Rect],
    size: usize,
    resample: Resample,
    lut: &[[f32; 256]; 3],
    par: &Par,
) -> Result<Vec<f32>, KernelError> {
    let plane = size * size;
    let mut out = vec![0f32; rects.len() * 3 * plane];
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
            r[i] = lut[0][usize::from(px[0])];
            g[i] = lut[1][usize::from(px[1])];
            b[i] = lut[2][usize::from(px[2])];
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
    let par = Par::new(threads);
    let n = list.len();
    let values = py
        .detach(|| process_rects(view, &list, size, resample, &lut, &par))
        .map_err(err)?;
    array_from_vec(py, values, &[n, 3, size, size])
}

#[pymodule(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(process, m)?)?;
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
}
