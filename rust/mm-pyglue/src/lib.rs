//! The thin layer every extension module (core and plugins) shares, so that a kernel error
//! becomes the same typed Python exception whichever wheel raised it.

use mm_kernels::{KernelError, RgbView};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyAnyMethods;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView};

/// Raise the `sglang_mm_core.errors` class for `err` (DecodeError, LimitError, MmRequestError).
pub fn to_pyerr(py: Python<'_>, err: KernelError) -> PyErr {
    let class = match &err {
        KernelError::UnsupportedFormat(_) | KernelError::Decode { .. } => "DecodeError",
        KernelError::Limit(_) => "LimitError",
        KernelError::InvalidArgument(_) => "KernelArgumentError",
    };
    let msg = err.to_string();
    match py
        .import("sglang_mm_core.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((msg,)))
    {
        Ok(exc) => PyErr::from_value(exc),
        Err(import_err) => import_err,
    }
}

/// A snapshot of a bytes-like object as `bytes` (borrowed when it already is one), so the
/// buffer cannot change while a kernel reads it without the GIL. abi3 for Python 3.10 has no
/// buffer protocol, so `bytearray` and `memoryview` are copied once; anything else is refused.
pub fn bytes_snapshot<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.clone());
    }
    if obj.is_instance_of::<PyByteArray>() || obj.is_instance_of::<PyMemoryView>() {
        let builtins = obj.py().import("builtins")?;
        return Ok(builtins
            .getattr("bytes")?
            .call1((obj,))?
            .cast_into::<PyBytes>()?);
    }
    let kind = obj.get_type().name()?;
    Err(to_pyerr(
        obj.py(),
        KernelError::InvalidArgument(format!("expected encoded image bytes, got {kind}")),
    ))
}

/// Borrow a C-contiguous `[h, w, 3]` uint8 array as an [`RgbView`] (no copy).
pub fn rgb_view<'a>(arr: &'a PyReadonlyArray3<'_, u8>) -> Result<RgbView<'a>, KernelError> {
    let shape = arr.shape();
    if shape[2] != 3 {
        return Err(KernelError::InvalidArgument(format!(
            "expected an RGB array of shape [h, w, 3], got {shape:?}"
        )));
    }
    let data = arr
        .as_slice()
        .map_err(|_| KernelError::InvalidArgument("RGB array must be C-contiguous".to_string()))?;
    RgbView::new(shape[1], shape[0], data)
}

/// Move `data` into a new numpy array of `shape` without copying the buffer.
pub fn array_from_vec<'py, T: numpy::Element>(
    py: Python<'py>,
    data: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, numpy::PyArrayDyn<T>>> {
    PyArray1::from_vec(py, data).reshape(shape)
}
