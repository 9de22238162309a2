//! `sglang_mm_inkling._native`: the original `inkling` module's API (`preprocess_images`,
//! `decode_patchify`, `decode_patchify_batch`, `patchify_rgb`, `rescale_patchify_hash`) on the
//! core's feature pipeline. Every call that touches pixels releases the GIL; batches fan out
//! through `mm_kernels::Par` and keep input order. (The family itself needs none of this: the
//! core composes its feature from the same table and writer.)

mod kernel;
mod rules;

use kernel::Patches;
use mm_kernels::{hash, KernelError, Par};
use mm_pyglue::{bytes_snapshot, rgb_view, to_pyerr};
use numpy::{PyArray1, PyReadonlyArray3};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use rules::Args;

/// The pool of one call. The caller (the Python wrappers of `sglang_mm_inkling.api`) always
/// says how many threads: the size is decided once, by the core's driver, never here.
fn par_for(py: Python<'_>, threads: i64) -> PyResult<Par<'static>> {
    let n = usize::try_from(threads).map_err(|_| {
        to_pyerr(
            py,
            KernelError::InvalidArgument(format!("threads must be >= 0, got {threads}")),
        )
    })?;
    Ok(Par::new(n))
}

fn args(py: Python<'_>, ps: i64, frac: Option<f64>, cap: Option<i64>) -> PyResult<Args> {
    Args::new(ps, frac, cap).map_err(|e| to_pyerr(py, e))
}

/// The same typed error, attributed to batch item `k` (`MmError.at_item`).
fn at_item(py: Python<'_>, err: PyErr, k: usize) -> PyErr {
    match err.value(py).call_method1("at_item", (k,)) {
        Ok(exc) => PyErr::from_value(exc),
        Err(_) => err,
    }
}

fn bits_array(py: Python<'_>, bits: Vec<u16>) -> Bound<'_, PyArray1<u16>> {
    PyArray1::from_vec(py, bits)
}

fn batch_bytes<'py>(datas: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let py = datas.py();
    let mut out = Vec::new();
    for (k, item) in datas.try_iter()?.enumerate() {
        out.push(bytes_snapshot(&item?).map_err(|e| at_item(py, e, k))?);
    }
    Ok(out)
}

/// Decode and patchify every item in parallel; the first failing index fails the call.
fn run_batch(
    py: Python<'_>,
    datas: &[Bound<'_, PyBytes>],
    args: &Args,
    threads: i64,
    with_hash: bool,
) -> PyResult<Vec<(Patches, u64)>> {
    let slices: Vec<&[u8]> = datas.iter().map(|b| b.as_bytes()).collect();
    let outer = par_for(py, threads)?;
    // Spare threads go to each item's rows when there are fewer items than threads.
    let inner = Par::new(outer.threads() / slices.len().max(1));
    let results = py.detach(|| {
        outer.map(&slices, |_, data| {
            let hash = if with_hash {
                hash::content_hash(data)
            } else {
                0
            };
            kernel::decode_patchify(data, args, &inner).map(|p| (p, hash))
        })
    });
    let mut out = Vec::with_capacity(results.len());
    for (k, r) in results.into_iter().enumerate() {
        out.push(r.map_err(|e| at_item(py, to_pyerr(py, e), k))?);
    }
    Ok(out)
}

/// Both batch functions: `(h, w, bits)` per item in input order, plus the content hash as a
/// fourth entry when `with_hash`.
fn batch_list<'py>(
    py: Python<'py>,
    datas: &Bound<'py, PyAny>,
    args: &Args,
    threads: i64,
    with_hash: bool,
) -> PyResult<Bound<'py, PyList>> {
    let owned = batch_bytes(datas)?;
    let done = run_batch(py, &owned, args, threads, with_hash)?;
    let items = done
        .into_iter()
        .map(|(p, h)| {
            let (height, width, bits) = (p.cut.height, p.cut.width, bits_array(py, p.bits));
            if with_hash {
                (height, width, bits, h).into_pyobject(py)
            } else {
                (height, width, bits).into_pyobject(py)
            }
        })
        .collect::<PyResult<Vec<Bound<'py, PyTuple>>>>()?;
    PyList::new(py, items)
}

/// `rescale_patchify_hash(arr, raw_bytes, patch_size, rescale_frac=None, rescale_cap=None,
/// *, threads) -> (h, w, bits, hash)`: the rescale and patches of an image the caller decoded
/// itself, plus the content hash of its encoded bytes `raw_bytes` (so the hash names the
/// source, not the pixels), both with the GIL released.
#[pyfunction]
#[pyo3(signature = (arr, raw_bytes, patch_size, rescale_frac=None, rescale_cap=None, *, threads))]
fn rescale_patchify_hash<'py>(
    py: Python<'py>,
    arr: PyReadonlyArray3<'py, u8>,
    raw_bytes: &Bound<'py, PyAny>,
    patch_size: i64,
    rescale_frac: Option<f64>,
    rescale_cap: Option<i64>,
    threads: i64,
) -> PyResult<(usize, usize, Bound<'py, PyArray1<u16>>, u64)> {
    let args = args(py, patch_size, rescale_frac, rescale_cap)?;
    let view = rgb_view(&arr).map_err(|e| to_pyerr(py, e))?;
    let bytes = bytes_snapshot(raw_bytes)?;
    let raw = bytes.as_bytes();
    let par = par_for(py, threads)?;
    let (p, h) = py
        .detach(|| {
            let h = hash::content_hash(raw);
            kernel::process_rgb(view, &args, &par).map(|p| (p, h))
        })
        .map_err(|e| to_pyerr(py, e))?;
    Ok((p.cut.height, p.cut.width, bits_array(py, p.bits), h))
}

/// `patchify_rgb(arr, patch_size) -> bits`: patches of an RGB image as it is (no rescale).
#[pyfunction]
#[pyo3(signature = (arr, patch_size, *, threads))]
fn patchify_rgb<'py>(
    py: Python<'py>,
    arr: PyReadonlyArray3<'py, u8>,
    patch_size: i64,
    threads: i64,
) -> PyResult<Bound<'py, PyArray1<u16>>> {
    let args = args(py, patch_size, None, None)?;
    let view = rgb_view(&arr).map_err(|e| to_pyerr(py, e))?;
    let par = par_for(py, threads)?;
    let p = py
        .detach(|| kernel::process_rgb(view, &args, &par))
        .map_err(|e| to_pyerr(py, e))?;
    Ok(bits_array(py, p.bits))
}

/// `decode_patchify(data, patch_size, rescale_frac=None, rescale_cap=None) -> (h, w, bits)`;
/// `(h, w)` is the size the patches were cut from (after the rescale).
#[pyfunction]
#[pyo3(signature = (data, patch_size, rescale_frac=None, rescale_cap=None, *, threads))]
fn decode_patchify<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    patch_size: i64,
    rescale_frac: Option<f64>,
    rescale_cap: Option<i64>,
    threads: i64,
) -> PyResult<(usize, usize, Bound<'py, PyArray1<u16>>)> {
    let args = args(py, patch_size, rescale_frac, rescale_cap)?;
    let bytes = bytes_snapshot(data)?;
    let slice = bytes.as_bytes();
    let par = par_for(py, threads)?;
    let p = py
        .detach(|| kernel::decode_patchify(slice, &args, &par))
        .map_err(|e| to_pyerr(py, e))?;
    Ok((p.cut.height, p.cut.width, bits_array(py, p.bits)))
}

/// `decode_patchify_batch(datas, ...) -> list[(h, w, bits)]`, in input order.
#[pyfunction]
#[pyo3(signature = (datas, patch_size, rescale_frac=None, rescale_cap=None, *, threads))]
fn decode_patchify_batch<'py>(
    py: Python<'py>,
    datas: &Bound<'py, PyAny>,
    patch_size: i64,
    rescale_frac: Option<f64>,
    rescale_cap: Option<i64>,
    threads: i64,
) -> PyResult<Bound<'py, PyList>> {
    let args = args(py, patch_size, rescale_frac, rescale_cap)?;
    batch_list(py, datas, &args, threads, false)
}

/// `preprocess_images(datas, ...) -> list[(h, w, bits, hash)]`, in input order; `hash` is the
/// core content hash of the encoded bytes.
#[pyfunction]
#[pyo3(signature = (datas, patch_size, rescale_frac=None, rescale_cap=None, *, threads))]
fn preprocess_images<'py>(
    py: Python<'py>,
    datas: &Bound<'py, PyAny>,
    patch_size: i64,
    rescale_frac: Option<f64>,
    rescale_cap: Option<i64>,
    threads: i64,
) -> PyResult<Bound<'py, PyList>> {
    let args = args(py, patch_size, rescale_frac, rescale_cap)?;
    batch_list(py, datas, &args, threads, true)
}

#[pymodule(name = "_native")]
fn sglang_mm_inkling_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rescale_patchify_hash, m)?)?;
    m.add_function(wrap_pyfunction!(patchify_rgb, m)?)?;
    m.add_function(wrap_pyfunction!(decode_patchify, m)?)?;
    m.add_function(wrap_pyfunction!(decode_patchify_batch, m)?)?;
    m.add_function(wrap_pyfunction!(preprocess_images, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
