//! Bindings of `mm_kernels::features`: a family's table and recipe, built once per pipeline,
//! and the calls that turn a decoded image (or encoded bytes, decoded on the way) and its
//! plan's parts into the feature (full or compact) with the GIL released.

use mm_kernels::decode::DecodeOptions;
use mm_kernels::features::{
    self, alloc, Arith, Backend, Bf16Table, Bf16Values, Codes, ComposeEncoder, Composed, Fill,
    Filter, Part, Patching, Recipe, Rect, Resize, Table, Values, Writer,
};
use mm_kernels::resize::{PassOrder, Resample};
use mm_kernels::{KernelError, Par, Result as KResult, RgbView};
use mm_pyglue::{array_from_vec, bytes_snapshot, rgb_view, to_pyerr};
use numpy::ndarray::ArrayViewD;
use numpy::{
    PyArray1, PyArrayDyn, PyReadonlyArray2, PyReadonlyArray3, PyReadwriteArray4,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A per-channel table, in float32 or rounded to bfloat16 (`sglang_mm_core.plugin.Table`).
#[pyclass(frozen, module = "sglang_mm_core._native")]
pub struct FeatureTable {
    table: Table,
    bf16: Option<Bf16Table>,
}

#[pymethods]
impl FeatureTable {
    #[new]
    #[pyo3(signature = (mean, std, rescale, arith, dtype, pad_sample=None))]
    fn new(
        py: Python<'_>,
        mean: [f64; 3],
        std: [f64; 3],
        rescale: f64,
        arith: &str,
        dtype: &str,
        pad_sample: Option<i32>,
    ) -> PyResult<Self> {
        let err = |e| to_pyerr(py, e);
        let arith = Arith::parse(arith).map_err(err)?;
        let mut table = Table::new(mean, std, rescale, arith).map_err(err)?;
        if let Some(sample) = pad_sample {
            table = table.with_pad_sample(sample);
        }
        let bf16 = match dtype {
            "float32" => None,
            "bfloat16" => Some(table.bf16()),
            other => {
                return Err(err(KernelError::InvalidArgument(format!(
                    "table dtype must be float32 or bfloat16, got {other:?}"
                ))))
            }
        };
        Ok(Self { table, bf16 })
    }

    /// `[3, 256]`: float32 values, or bfloat16 bits as uint16.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match &self.bf16 {
            None => {
                let flat: Vec<f32> = self.table.values().iter().flatten().copied().collect();
                array_from_vec(py, flat, &[3, 256])?.into_any()
            }
            Some(b) => {
                let flat: Vec<u16> = b.values().iter().flatten().copied().collect();
                array_from_vec(py, flat, &[3, 256])?.into_any()
            }
        })
    }

    /// The pad value per channel (`[3]`, as `values`), or None.
    fn pad<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match (&self.bf16, self.table.pad()) {
            (_, None) => None,
            (None, Some(p)) => Some(PyArray1::from_vec(py, p.to_vec()).into_any()),
            (Some(b), Some(_)) => {
                let p = b.pad().unwrap_or_default();
                Some(PyArray1::from_vec(py, p.to_vec()).into_any())
            }
        })
    }
}

/// A feature recipe: the resampler of the parts and the writer (`sglang_mm_core.plugin`'s
/// `Features`).
#[pyclass(frozen, module = "sglang_mm_core._native")]
pub struct FeatureRecipe {
    recipe: Recipe,
}

#[pymethods]
impl FeatureRecipe {
    #[new]
    #[pyo3(signature = (
        writer, resample, pass_order="pillow13", *, tile=0, patch_size=0, merge_size=0,
        temporal_patch_size=0, pad_to=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        writer: &str,
        resample: &str,
        pass_order: &str,
        tile: usize,
        patch_size: usize,
        merge_size: usize,
        temporal_patch_size: usize,
        pad_to: Option<usize>,
    ) -> PyResult<Self> {
        let err = |e| to_pyerr(py, e);
        let writer = match writer {
            "planes" => Writer::Planes,
            "tiles" => Writer::Tiles(tile),
            "patch_rows" => Writer::PatchRows(Patching {
                patch_size,
                merge_size,
                temporal_patch_size,
            }),
            "hwc_patches" => Writer::HwcPatches { patch_size, pad_to },
            other => {
                return Err(err(KernelError::InvalidArgument(format!(
                    "unknown writer {other:?} (expected planes, tiles, patch_rows or \
                     hwc_patches)"
                ))))
            }
        };
        let resize = Resize {
            resample: Resample::parse(resample).map_err(err)?,
            order: PassOrder::parse(pass_order).map_err(err)?,
        };
        Ok(Self {
            recipe: Recipe { resize, writer },
        })
    }

    /// The feature of `image` (RGB uint8 `[h, w, 3]`) for `parts`: float32 or bfloat16 bits
    /// through `table`, or (`codes`) the uint8 codes; its shape is the writer's. The GIL is
    /// released while the pixels are worked. With `cancel`, setting that flag from another
    /// thread stops the work between bands: the call then raises `RequestCancelledError`.
    #[pyo3(signature = (image, parts, table, codes=false, threads=1, cancel=None))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        image: PyReadonlyArray3<'py, u8>,
        parts: Vec<PartArg>,
        table: &FeatureTable,
        codes: bool,
        threads: usize,
        cancel: Option<PyRef<'py, CancelFlag>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let image = rgb_view(&image).map_err(|e| to_pyerr(py, e))?;
        let job = Decoded {
            image,
            parts: parts.into_iter().map(PartArg::part).collect(),
            recipe: &self.recipe,
        };
        feature(py, &job, table, codes, threads, cancel)
    }

    /// The feature of the encoded image `data`, decoded as `alpha`, `exif_orientation`,
    /// `max_pixels` and `max_side` say, for `parts` planned for its upright `size` (`(width,
    /// height)`, as `image_stream_size` gives it; another size is a `KernelArgumentError`):
    /// `run` of the decoded image, bit for bit, errors included (the decode's first). With two
    /// threads or more and an image that streams (a JPEG or a non-interlaced PNG), the parts'
    /// bands start while the rest of the image is still being decoded. `cancel` also stops the
    /// decode.
    #[pyo3(signature = (
        data, size, parts, table, codes=false, threads=1, cancel=None, *, alpha="white",
        exif_orientation=true, max_pixels=None, max_side=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run_encoded<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        size: (usize, usize),
        parts: Vec<PartArg>,
        table: &FeatureTable,
        codes: bool,
        threads: usize,
        cancel: Option<PyRef<'py, CancelFlag>>,
        alpha: &str,
        exif_orientation: bool,
        max_pixels: Option<&Bound<'py, PyAny>>,
        max_side: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = crate::decode_options(py, alpha, exif_orientation, max_pixels, max_side)?;
        let snapshot = bytes_snapshot(data)?;
        let job = Encoded {
            data: snapshot.as_bytes(),
            opts,
            size,
            parts: parts.into_iter().map(PartArg::part).collect(),
            recipe: &self.recipe,
        };
        feature(py, &job, table, codes, threads, cancel)
    }
}

/// How a feature is computed for one encoder: [`FeatureRecipe::run`]'s and `run_encoded`'s
/// inputs behind one encoder dispatch.
trait Compose: Sync {
    fn compose<E: ComposeEncoder>(&self, enc: &E, par: &Par<'_>) -> KResult<Composed<E::Out>>;
}

/// A decoded image and its parts.
struct Decoded<'a> {
    image: RgbView<'a>,
    parts: Vec<Part>,
    recipe: &'a Recipe,
}

impl Compose for Decoded<'_> {
    fn compose<E: ComposeEncoder>(&self, enc: &E, par: &Par<'_>) -> KResult<Composed<E::Out>> {
        features::compose(self.image, &self.parts, self.recipe, enc, par)
    }
}

/// Encoded bytes, their decode options, and the parts planned for the upright `size`.
struct Encoded<'a> {
    data: &'a [u8],
    opts: DecodeOptions,
    size: (usize, usize),
    parts: Vec<Part>,
    recipe: &'a Recipe,
}

impl Compose for Encoded<'_> {
    fn compose<E: ComposeEncoder>(&self, enc: &E, par: &Par<'_>) -> KResult<Composed<E::Out>> {
        let plan = |w: usize, h: usize| {
            if (w, h) == self.size {
                Ok(self.parts.clone())
            } else {
                Err(KernelError::InvalidArgument(format!(
                    "the image is {w}x{h}, its parts were planned for {}x{}",
                    self.size.0, self.size.1
                )))
            }
        };
        features::compose_encoded(self.data, &self.opts, plan, self.recipe, enc, par)
    }
}

/// `job` through the encoder `codes` and `table` ask for (codes, bfloat16 or float32 values),
/// with the GIL released and at most `threads` threads watching `cancel`, as the array of its
/// shape (float32 ones on a buffer the reuse pool gets back).
fn feature<'py, C: Compose>(
    py: Python<'py>,
    job: &C,
    table: &FeatureTable,
    codes: bool,
    threads: usize,
    cancel: Option<PyRef<'py, CancelFlag>>,
) -> PyResult<Bound<'py, PyAny>> {
    let err = |e| to_pyerr(py, e);
    let flag = cancel.map(|c| Arc::clone(&c.0));
    let par = Par::new(threads);
    let par = match &flag {
        Some(f) => par.with_cancel(f),
        None => par,
    };
    if codes {
        let out = py
            .detach(|| checked(&par, job.compose(&Codes, &par)))
            .map_err(err)?;
        return Ok(array_from_vec(py, out.data, &out.shape)?.into_any());
    }
    match &table.bf16 {
        Some(b) => {
            let out = py
                .detach(|| checked(&par, job.compose(&Bf16Values(b), &par)))
                .map_err(err)?;
            Ok(array_from_vec(py, out.data, &out.shape)?.into_any())
        }
        None => {
            let out = py
                .detach(|| checked(&par, job.compose(&Values(&table.table), &par)))
                .map_err(err)?;
            Ok(pooled_array(py, out.data, &out.shape)?.into_any())
        }
    }
}

/// `out` unless `par`'s cancel flag was set meanwhile: a cancelled run's output is incomplete,
/// so it is dropped, never returned.
fn checked<T>(par: &Par<'_>, out: Result<T, KernelError>) -> Result<T, KernelError> {
    out.and_then(|o| par.check().map(|()| o))
}

/// A one-way flag that another thread sets to stop the kernel calls given it (`Recipe.run`'s
/// `cancel`): a request's cancel scope owns one, and sets it when the request's deadline passes
/// or its client leaves.
#[pyclass(module = "sglang_mm_core._native", frozen)]
pub struct CancelFlag(Arc<AtomicBool>);

#[pymethods]
impl CancelFlag {
    #[new]
    fn new() -> Self {
        Self(Arc::new(AtomicBool::new(false)))
    }

    /// Set the flag: kernels watching it stop at their next band.
    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the flag is set.
    #[getter]
    fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A part as Python passes it: `(source, (width, height), crop, pad_to, fill)`, the
/// rectangles `(x, y, w, h)` or None, `fill` `((r, g, b), (x, y))` or None.
type RectArg = Option<(usize, usize, usize, usize)>;

#[derive(FromPyObject)]
pub struct PartArg(
    RectArg,
    (usize, usize),
    RectArg,
    Option<(usize, usize)>,
    Option<([u8; 3], (usize, usize))>,
);

impl PartArg {
    fn part(self) -> Part {
        let rect = |r: RectArg| r.map(|(x, y, w, h)| Rect::new(x, y, w, h));
        Part {
            source: rect(self.0),
            size: self.1,
            crop: rect(self.2),
            pad_to: self.3,
            fill: self.4.map(|(color, at)| Fill { color, at }),
        }
    }
}

/// The buffer behind a float32 feature array; handed to the reuse pool when numpy lets go.
#[pyclass(frozen, module = "sglang_mm_core._native")]
struct Owned {
    values: Vec<f32>,
}

impl Drop for Owned {
    fn drop(&mut self) {
        alloc::give_f32(std::mem::take(&mut self.values));
    }
}

/// `values` as an array of `shape`, without copying; its buffer returns to the pool.
fn pooled_array<'py>(
    py: Python<'py>,
    values: Vec<f32>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    if shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(values.len()) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{} values do not make an array of shape {shape:?}",
            values.len()
        )));
    }
    let mut values = values;
    // Taken mutably before the move (which leaves the heap buffer where it is): numpy may write
    // through it.
    let ptr = values.as_mut_ptr();
    let owner = Bound::new(py, Owned { values })?;
    // SAFETY: `ptr` points at `shape.product()` initialised floats (checked above), owned by
    // `owner`, which never touches nor reallocates them until it is dropped; the array keeps
    // `owner` alive as its base object.
    let view = unsafe { ArrayViewD::from_shape_ptr(shape, ptr.cast_const()) };
    // SAFETY: `view` borrows memory that `owner` keeps alive for as long as the array lives.
    Ok(unsafe { PyArrayDyn::borrow_from_array(&view, owner.into_any()) })
}

/// `(resampler, arithmetic)` of a HuggingFace backend name (`pil`, `aten_u8`) for a filter
/// (`bicubic`, `bilinear`): `mm_kernels::features::Backend`, the one reading of those names.
#[pyfunction]
#[pyo3(signature = (backend, filter="bicubic"))]
fn hf_backend(py: Python<'_>, backend: &str, filter: &str) -> PyResult<(String, &'static str)> {
    let err = |e| to_pyerr(py, e);
    let b = Backend::parse(backend).map_err(err)?;
    let f = match filter {
        "bicubic" => Filter::Bicubic,
        "bilinear" => Filter::Bilinear,
        other => {
            return Err(err(KernelError::InvalidArgument(format!(
                "unknown filter {other:?} (expected bicubic or bilinear)"
            ))))
        }
    };
    let arith = match b.arith() {
        Arith::Numpy => "numpy",
        Arith::Torchvision => "torchvision",
        Arith::Float32 => "float32",
    };
    Ok((b.resample(f).name().to_string(), arith))
}

/// `out[r, c, slot, p] = luts[c][codes[r, c, p]]` over C-contiguous `codes` `[rows, 3, pp]`,
/// `luts` `[3, 256]` and `out` `[rows, 3, tps, pp]`: one frame's codes expanded into its slot
/// of a temporal group (a video feature written as its frames are coded).
fn fill_slot<T: Copy>(
    codes: &[u8],
    luts: &[T],
    out: &mut [T],
    pp: usize,
    tps: usize,
    slot: usize,
) -> Result<(), KernelError> {
    let bad = |what: String| Err(KernelError::InvalidArgument(what));
    if luts.len() != 3 * 256 {
        return bad(format!("luts hold {} values, not 3 x 256", luts.len()));
    }
    if pp == 0 || slot >= tps || !codes.len().is_multiple_of(3 * pp) {
        return bad(format!(
            "codes of {} for patches of {pp}, slot {slot} of {tps}",
            codes.len()
        ));
    }
    let rows = codes.len() / (3 * pp);
    if out.len() != rows * 3 * tps * pp {
        return bad(format!(
            "out holds {}, not {rows} x 3 x {tps} x {pp}",
            out.len()
        ));
    }
    for (plane, src) in codes.chunks_exact(pp).enumerate() {
        let lut = &luts[(plane % 3) * 256..(plane % 3 + 1) * 256];
        let at = (plane * tps + slot) * pp;
        for (d, &s) in out[at..at + pp].iter_mut().zip(src) {
            *d = lut[usize::from(s)];
        }
    }
    Ok(())
}

/// One frame's uint8 ``codes`` ``[rows, 3, pp]`` through the table ``luts`` ``[3, 256]``
/// (float32, or bfloat16 as uint16) into slot ``slot`` of ``out`` ``[rows, 3, tps, pp]`` (one
/// temporal group of a video feature), with the GIL released.
#[pyfunction]
fn lut_into_slot(
    py: Python<'_>,
    codes: PyReadonlyArray3<'_, u8>,
    luts: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    slot: usize,
) -> PyResult<()> {
    let src = codes.as_slice()?;
    let pp = codes.shape()[2];
    if let Ok(mut dst) = out.extract::<PyReadwriteArray4<'_, f32>>() {
        let table = luts.extract::<PyReadonlyArray2<'_, f32>>()?;
        let (lut, tps) = (table.as_slice()?, dst.shape()[2]);
        let dst = dst.as_slice_mut()?;
        return py
            .detach(|| fill_slot(src, lut, dst, pp, tps, slot))
            .map_err(|e| to_pyerr(py, e));
    }
    let mut dst = out.extract::<PyReadwriteArray4<'_, u16>>()?;
    let table = luts.extract::<PyReadonlyArray2<'_, u16>>()?;
    let (lut, tps) = (table.as_slice()?, dst.shape()[2]);
    let dst = dst.as_slice_mut()?;
    py.detach(|| fill_slot(src, lut, dst, pp, tps, slot))
        .map_err(|e| to_pyerr(py, e))
}

/// Register the classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FeatureTable>()?;
    m.add_class::<FeatureRecipe>()?;
    m.add_class::<CancelFlag>()?;
    m.add_function(wrap_pyfunction!(hf_backend, m)?)?;
    m.add_function(wrap_pyfunction!(lut_into_slot, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_slot_writes_its_slot_only() {
        let luts: Vec<f32> = (0..768).map(|i| i as f32).collect();
        let codes: Vec<u8> = vec![1, 2, 3, 4, 5, 6]; // one row, 3 channels, pp 2
        let mut out = vec![-1.0f32; 12]; // tps 2
        fill_slot(&codes, &luts, &mut out, 2, 2, 1).expect("valid");
        assert_eq!(
            out,
            [-1.0, -1.0, 1.0, 2.0, -1.0, -1.0, 259.0, 260.0, -1.0, -1.0, 517.0, 518.0]
        );
        assert!(fill_slot(&codes, &luts, &mut out, 2, 2, 2).is_err());
        assert!(fill_slot(&codes[..5], &luts, &mut out, 2, 2, 0).is_err());
        assert!(fill_slot(&codes, &luts[..10], &mut out, 2, 2, 0).is_err());
        assert!(fill_slot(&codes, &luts, &mut out[..11], 2, 2, 0).is_err());
    }
}
