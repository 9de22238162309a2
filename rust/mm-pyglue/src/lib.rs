//! The thin layer every extension module (core and plugins) shares, so that a kernel error
//! becomes the same typed Python exception whichever wheel raised it.

#![warn(missing_docs)]

use mm_kernels::{KernelError, RgbView};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyAnyMethods;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView};

/// Raise the `sglang_mm_core.errors` class for `err` (DecodeError, LimitError,
/// KernelArgumentError, RequestCancelledError) with the message of `err` and its structured fields as keyword
/// arguments: `format` and `unsupported` for a decode error, `limit`, `limit_value` and `value`
/// for a named limit. A program reads them as attributes instead of parsing the message.
pub fn to_pyerr(py: Python<'_>, err: KernelError) -> PyErr {
    match build_pyerr(py, &err) {
        Ok(exc) => PyErr::from_value(exc),
        Err(import_err) => import_err,
    }
}

fn build_pyerr<'py>(py: Python<'py>, err: &KernelError) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(py);
    let class = match err {
        KernelError::UnsupportedFormat(u) => {
            kwargs.set_item("format", u.detected)?;
            kwargs.set_item("unsupported", true)?;
            "DecodeError"
        }
        KernelError::Decode { format, .. } => {
            kwargs.set_item("format", *format)?;
            kwargs.set_item("unsupported", false)?;
            "DecodeError"
        }
        KernelError::Limit(_) => "LimitError",
        KernelError::LimitExceeded {
            limit, max, value, ..
        } => {
            kwargs.set_item("limit", *limit)?;
            kwargs.set_item("limit_value", *max)?;
            kwargs.set_item("value", *value)?;
            "LimitError"
        }
        KernelError::InvalidArgument(_) => "KernelArgumentError",
        KernelError::Cancelled => "RequestCancelledError",
    };
    py.import("sglang_mm_core.errors")?
        .getattr(class)?
        .call((err.to_string(),), Some(&kwargs))
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
