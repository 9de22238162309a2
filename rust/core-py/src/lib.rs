//! `sglang_mm_core._native`: thin bindings over `mm-kernels`. Every call that touches pixels or
//! bytes releases the GIL; argument parsing and array wrapping stay here, logic stays in Rust.

use mm_kernels::decode::{self, Alpha, DecodeOptions};
use mm_kernels::resize::{self, PassOrder, Resample};
use mm_kernels::{b64, dims, hash, limits, pct, KernelError, Par};
use mm_pyglue::{array_from_vec, bytes_snapshot, rgb_view, to_pyerr};
use numpy::{PyArray1, PyArrayDyn, PyReadonlyArray1, PyReadonlyArray3};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyString};

mod body_shape;
mod features;
mod layout;

/// Run `f` over the bytes of a bytes-like object (see `mm_pyglue::bytes_snapshot`).
fn with_bytes<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    let snapshot = bytes_snapshot(obj)?;
    Ok(f(snapshot.as_bytes()))
}

/// Integer argument `name` in `0..=max`. Anything else (negative, too large, a bool, not an
/// integer) is a `KernelArgumentError` naming it, not pyo3's `OverflowError`/`TypeError`.
fn int_arg<T>(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str, max: T) -> PyResult<T>
where
    T: TryFrom<i128> + Into<u128> + Copy + std::fmt::Display,
{
    let value = if obj.is_instance_of::<PyBool>() {
        None
    } else {
        obj.extract::<i128>().ok()
    };
    if let Some(v) = value {
        if v >= 0 && (v as u128) <= max.into() {
            if let Ok(out) = T::try_from(v) {
                return Ok(out);
            }
        }
    }
    let mut shown = obj
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".to_owned());
    if shown.len() > 40 {
        let cut = (0..=37)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push_str("...");
    }
    let msg = format!("{name} must be an integer in 0..={max}, got {shown}");
    Err(to_pyerr(py, KernelError::InvalidArgument(msg)))
}

/// `int_arg` for an optional argument (None: `default`).
fn opt_int_arg<T>(
    py: Python<'_>,
    obj: Option<&Bound<'_, PyAny>>,
    name: &str,
    max: T,
    default: Option<T>,
) -> PyResult<Option<T>>
where
    T: TryFrom<i128> + Into<u128> + Copy + std::fmt::Display,
{
    match obj {
        Some(o) if !o.is_none() => int_arg(py, o, name, max).map(Some),
        _ => Ok(default),
    }
}

/// The decode options of the Python keywords (`max_pixels`, `max_side`: None for the default
/// limits; anything but an integer in range is a `KernelArgumentError` naming it).
pub(crate) fn decode_options(
    py: Python<'_>,
    alpha: &str,
    exif_orientation: bool,
    max_pixels: Option<&Bound<'_, PyAny>>,
    max_side: Option<&Bound<'_, PyAny>>,
) -> PyResult<DecodeOptions> {
    let max_pixels = opt_int_arg(py, max_pixels, "max_pixels", u64::MAX, None)?
        .unwrap_or(limits::MAX_IMAGE_PIXELS);
    let max_side =
        opt_int_arg(py, max_side, "max_side", u32::MAX, None)?.unwrap_or(limits::MAX_IMAGE_SIDE);
    Ok(DecodeOptions {
        alpha: Alpha::parse(alpha).map_err(|e| to_pyerr(py, e))?,
        exif_orientation,
        max_pixels,
        max_side,
    })
}

#[pyfunction]
#[pyo3(signature = (data, alpha="white", exif_orientation=true, max_pixels=None, max_side=None))]
fn image_decode_rgb<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    alpha: &str,
    exif_orientation: bool,
    max_pixels: Option<&Bound<'py, PyAny>>,
    max_side: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    let opts = decode_options(py, alpha, exif_orientation, max_pixels, max_side)?;
    let img = with_bytes(data, |bytes| py.detach(|| decode::decode_rgb(bytes, &opts)))?
        .map_err(|e| to_pyerr(py, e))?;
    array_from_vec(py, img.data, &[img.height, img.width, 3])
}

/// `(width, height)` of the upright image when its decode streams its rows under these
/// options (a JPEG whose rows come out final, RGB or grayscale, or a non-interlaced PNG; no
/// orientation to apply), from the header and checked as a decode checks it; None for any
/// other image (the driver then decodes it whole first). What `FeatureRecipe.run_encoded` is
/// planned with.
#[pyfunction]
#[pyo3(signature = (data, alpha="white", exif_orientation=true, max_pixels=None, max_side=None))]
fn image_stream_size<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    alpha: &str,
    exif_orientation: bool,
    max_pixels: Option<&Bound<'py, PyAny>>,
    max_side: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<(u32, u32)>> {
    let opts = decode_options(py, alpha, exif_orientation, max_pixels, max_side)?;
    with_bytes(data, |bytes| decode::stream_size(bytes, &opts))?.map_err(|e| to_pyerr(py, e))
}

/// `(width, height)` of the upright image; with `max_pixels` or `max_side`, an image over
/// them is refused by the same rule (and message) as a decode.
#[pyfunction]
#[pyo3(signature = (data, exif_orientation=true, max_pixels=None, max_side=None))]
fn image_dimensions(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    exif_orientation: bool,
    max_pixels: Option<&Bound<'_, PyAny>>,
    max_side: Option<&Bound<'_, PyAny>>,
) -> PyResult<(u32, u32)> {
    let max_pixels = opt_int_arg(py, max_pixels, "max_pixels", u64::MAX, None)?;
    let max_side = opt_int_arg(py, max_side, "max_side", u64::MAX, None)?;
    // Header only, but a PNG probe walks every chunk (its EXIF may follow the pixel data).
    with_bytes(data, |bytes| {
        py.detach(|| {
            let (w, h) = decode::image_dimensions(bytes, exif_orientation)?;
            if max_pixels.is_some() || max_side.is_some() {
                let format = decode::Format::detect(bytes)?.name();
                let (max_pixels, max_side) =
                    (max_pixels.unwrap_or(u64::MAX), max_side.unwrap_or(u64::MAX));
                limits::check_size(format, w.into(), h.into(), max_pixels, max_side)?;
            }
            Ok((w, h))
        })
    })?
    .map_err(|e| to_pyerr(py, e))
}

/// `(mode, transparency, format)`: the mode Pillow opens `data` in, whether it has a
/// transparency entry, and the format, from the header alone (see `decode::SourceMode`).
#[pyfunction]
fn image_source_mode(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
) -> PyResult<(&'static str, bool, &'static str)> {
    with_bytes(data, |bytes| {
        py.detach(|| decode::source_mode(bytes))
            .map(|(m, format)| (m.mode, m.transparency, format.name()))
    })?
    .map_err(|e| to_pyerr(py, e))
}

#[pyfunction]
#[pyo3(signature = (arr, out_w, out_h, resample="pil_lanczos", pass_order="pillow13", threads=None))]
fn resize_rgb<'py>(
    py: Python<'py>,
    arr: PyReadonlyArray3<'py, u8>,
    out_w: &Bound<'py, PyAny>,
    out_h: &Bound<'py, PyAny>,
    resample: &str,
    pass_order: &str,
    threads: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    let out_w = int_arg(py, out_w, "out_w", u32::MAX)? as usize;
    let out_h = int_arg(py, out_h, "out_h", u32::MAX)? as usize;
    let threads = opt_int_arg(py, threads, "threads", u16::MAX, Some(1))?.unwrap_or(1) as usize;
    let resample = Resample::parse(resample).map_err(|e| to_pyerr(py, e))?;
    let order = PassOrder::parse(pass_order).map_err(|e| to_pyerr(py, e))?;
    let view = rgb_view(&arr).map_err(|e| to_pyerr(py, e))?;
    let par = Par::new(threads);
    let out = py
        .detach(|| resize::resize_rgb(view, out_w, out_h, resample, order, &par))
        .map_err(|e| to_pyerr(py, e))?;
    array_from_vec(py, out.data, &[out.height, out.width, 3])
}

#[pyfunction]
#[pyo3(signature = (w, h, frac, cap=None))]
fn scaled_dims(
    py: Python<'_>,
    w: &Bound<'_, PyAny>,
    h: &Bound<'_, PyAny>,
    frac: f64,
    cap: Option<&Bound<'_, PyAny>>,
) -> PyResult<(u32, u32)> {
    let w = int_arg(py, w, "w", u32::MAX)?;
    let h = int_arg(py, h, "h", u32::MAX)?;
    let cap = opt_int_arg(py, cap, "cap", u32::MAX, None)?;
    if !(frac.is_finite() && frac > 0.0) {
        let msg = format!("frac must be a finite number > 0, got {frac}");
        return Err(to_pyerr(py, KernelError::InvalidArgument(msg)));
    }
    Ok(dims::scaled_dims(w, h, frac, cap))
}

#[pyfunction]
fn content_hash(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
    with_bytes(data, |bytes| {
        if bytes.len() > 1 << 16 {
            py.detach(|| hash::content_hash(bytes))
        } else {
            hash::content_hash(bytes)
        }
    })
}

#[pyfunction]
fn blake3_hex(data: &Bound<'_, PyAny>) -> PyResult<String> {
    with_bytes(data, hash::blake3_hex)
}

/// The text of a `str` or bytes-like source from byte `start` on: a `str` is borrowed as its
/// UTF-8 (no copy for an ASCII string), so a payload far inside a huge `data:` URL is never
/// sliced out of it first.
fn with_text<R>(obj: &Bound<'_, PyAny>, start: usize, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    let tail = |bytes: &[u8]| -> PyResult<usize> {
        if start > bytes.len() {
            return Err(to_pyerr(
                obj.py(),
                KernelError::InvalidArgument(format!(
                    "start {start} is past the end of a {}-byte text",
                    bytes.len()
                )),
            ));
        }
        Ok(start)
    };
    if obj.is_instance_of::<PyString>() {
        let s = obj.extract::<&str>().map_err(|_| {
            to_pyerr(
                obj.py(),
                KernelError::InvalidArgument(
                    "the text holds a lone surrogate, which has no UTF-8 form".to_string(),
                ),
            )
        })?;
        let at = tail(s.as_bytes())?;
        return Ok(f(&s.as_bytes()[at..]));
    }
    let snapshot = bytes_snapshot(obj)?;
    let at = tail(snapshot.as_bytes())?;
    Ok(f(&snapshot.as_bytes()[at..]))
}

/// Decoded bytes enough for every format's magic number (`decode::Format::detect`).
const SNIFF_BYTES: usize = 64;

/// Refuse, from the first decoded bytes, a payload that is no image format we decode: the same
/// `DecodeError` the decoder would give, without decoding the rest. `head` is the decoded prefix
/// (the whole payload when it is shorter than `SNIFF_BYTES`).
fn sniff_image(head: &[u8]) -> Result<(), KernelError> {
    decode::Format::detect(head).map(|_| ())
}

#[pyfunction]
#[pyo3(signature = (data, start = 0))]
fn base64_decoded_len(data: &Bound<'_, PyAny>, start: usize) -> PyResult<usize> {
    with_text(data, start, b64::decoded_len)
}

/// Base64 from byte `start` of `data`; with `sniff`, a payload whose first bytes are no image
/// format is a `DecodeError` before the rest is decoded.
#[pyfunction]
#[pyo3(signature = (data, start = 0, sniff = false))]
fn base64_decode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    start: usize,
    sniff: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let decoded = with_text(data, start, |text| {
        py.detach(|| {
            if sniff {
                let t = text.trim_ascii_start();
                // A prefix of whole quanta (a short payload is left to the decoder); if it does
                // not decode, the full decode says why.
                let quanta = SNIFF_BYTES.div_ceil(3) * 4;
                if t.len() > quanta {
                    if let Ok(head) = b64::base64_decode(&t[..quanta]) {
                        sniff_image(&head)?;
                    }
                }
            }
            b64::base64_decode(text)
        })
    })?
    .map_err(|e| to_pyerr(py, e))?;
    Ok(PyBytes::new(py, &decoded))
}

#[pyfunction]
#[pyo3(signature = (data, start = 0))]
fn percent_decoded_len(py: Python<'_>, data: &Bound<'_, PyAny>, start: usize) -> PyResult<usize> {
    with_text(data, start, |text| py.detach(|| pct::decoded_len(text)))
}

/// Percent-decoding (as `urllib.parse.unquote_to_bytes`) from byte `start` of `data`, written
/// straight into the new `bytes` with the GIL released; with `sniff`, the first bytes must be
/// an image format we decode (a `DecodeError` before the rest is decoded).
#[pyfunction]
#[pyo3(signature = (data, start = 0, sniff = false))]
fn percent_decode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    start: usize,
    sniff: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    with_text(data, start, |text| {
        let n = py.detach(|| pct::decoded_len(text));
        if sniff {
            let mut head = [0u8; SNIFF_BYTES];
            let (_, wrote) = pct::percent_decode_into(text, &mut head);
            sniff_image(&head[..wrote]).map_err(|e| to_pyerr(py, e))?;
        }
        PyBytes::new_with(py, n, |buf| {
            py.detach(|| pct::percent_decode_into(text, buf));
            Ok(())
        })
    })?
}

/// Whether this build can spawn kernel threads (the `parallel` feature of mm-kernels).
#[pyfunction]
fn parallel_enabled() -> bool {
    Par::new(2).threads() > 1
}

/// ``(members, depth, ids, others, first_other)`` of a JSON text (see `body_shape`), measured
/// with the GIL released so that a server can refuse a pathological body before parsing it.
#[pyfunction]
fn json_shape(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
) -> PyResult<(u64, u64, u64, u64, Option<u64>)> {
    with_bytes(data, |bytes| {
        let s = py.detach(|| body_shape::shape(bytes));
        (s.members, s.depth, s.ids, s.others, s.first_other)
    })
}

/// `json_ids`' answer: the ids, and where their array starts and ends in the body.
type IdsSpan<'py> = (Bound<'py, PyArray1<i64>>, usize, usize);

/// The token ids of a request body parsed natively, with the GIL released: ``(ids, start,
/// end)`` for the array that is the value of the top-level object's last ``"input_ids"``
/// member (``body[start:end]``, brackets included), or None when there is none or it holds
/// anything but JSON integers in ``0..2**63`` (the caller then parses the body whole).
#[pyfunction]
fn json_ids<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Option<IdsSpan<'py>>> {
    let snapshot = bytes_snapshot(data)?;
    let bytes = snapshot.as_bytes();
    let got = py.detach(|| {
        let (start, end) = body_shape::ids_span(bytes)?;
        let ids = body_shape::parse_ids(&bytes[start + 1..end - 1])?;
        Some((ids, start, end))
    });
    Ok(got.map(|(ids, start, end)| (PyArray1::from_vec(py, ids), start, end)))
}

/// Prompts at least this long are expanded or positioned with the GIL released.
const DETACH_TOKENS: usize = 1 << 15;

/// Indices of `token` in a contiguous int64 id array.
#[pyfunction]
fn token_indices(
    py: Python<'_>,
    ids: PyReadonlyArray1<'_, i64>,
    token: i64,
) -> PyResult<Vec<usize>> {
    let src = ids.as_slice()?;
    if src.len() >= DETACH_TOKENS {
        return Ok(py.detach(|| layout::token_indices(src, token)));
    }
    Ok(layout::token_indices(src, token))
}

/// The index into ``at`` of the first placeholder not directly between ``before`` and
/// ``after`` (None: all are). ``at`` must hold indices into ``ids``.
#[pyfunction]
fn first_unwrapped(
    ids: PyReadonlyArray1<'_, i64>,
    at: Vec<usize>,
    before: i64,
    after: i64,
) -> PyResult<Option<usize>> {
    let src = ids.as_slice()?;
    if at.iter().any(|&i| i >= src.len()) {
        return Err(pyo3::exceptions::PyIndexError::new_err(
            "placeholder index out of range",
        ));
    }
    Ok(layout::first_unwrapped(src, &at, before, after))
}

/// The expanded ids (an int64 array) and each item's inclusive offsets.
type ExpandedIds<'py> = (Bound<'py, PyArrayDyn<i64>>, Vec<(i64, i64)>);

/// ``(expanded ids, [(first, last)])`` when placeholder ``at[k]`` becomes ``counts[k]``
/// copies of ``token``; None when the arguments do not describe such an expansion (the
/// caller's general path then names what is wrong).
#[pyfunction]
fn expand_repeats<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, i64>,
    at: Vec<usize>,
    token: i64,
    counts: Vec<i64>,
) -> PyResult<Option<ExpandedIds<'py>>> {
    let src = ids.as_slice()?;
    let got = if src.len() >= DETACH_TOKENS {
        py.detach(|| layout::expand_repeats(src, &at, token, &counts))
    } else {
        layout::expand_repeats(src, &at, token, &counts)
    };
    match got {
        Some((out, offsets)) => {
            let n = out.len();
            Ok(Some((array_from_vec(py, out, &[n])?, offsets)))
        }
        None => Ok(None),
    }
}

/// Image-only MRoPE: ``(int64 [3, length] positions, delta)`` for the inclusive ``offsets``
/// and merged ``grids``; None when they do not fit (the caller's general path names why).
#[pyfunction]
fn mrope_positions<'py>(
    py: Python<'py>,
    length: usize,
    offsets: Vec<(i64, i64)>,
    grids: Vec<(i64, i64, i64)>,
) -> PyResult<Option<(Bound<'py, PyArrayDyn<i64>>, i64)>> {
    if offsets.len() != grids.len() {
        return Ok(None);
    }
    let mut blocks: Vec<layout::Block> = offsets
        .iter()
        .zip(&grids)
        .map(|(&(start, end), &(t, h, w))| layout::Block {
            start,
            end,
            t,
            h,
            w,
        })
        .collect();
    let got = if length >= DETACH_TOKENS {
        py.detach(|| layout::mrope_positions(length, &mut blocks))
    } else {
        layout::mrope_positions(length, &mut blocks)
    };
    match got {
        Some((pos, delta)) => Ok(Some((array_from_vec(py, pos, &[3, length])?, delta))),
        None => Ok(None),
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(image_decode_rgb, m)?)?;
    m.add_function(wrap_pyfunction!(image_dimensions, m)?)?;
    m.add_function(wrap_pyfunction!(image_source_mode, m)?)?;
    m.add_function(wrap_pyfunction!(image_stream_size, m)?)?;
    m.add_function(wrap_pyfunction!(resize_rgb, m)?)?;
    m.add_function(wrap_pyfunction!(scaled_dims, m)?)?;
    m.add_function(wrap_pyfunction!(content_hash, m)?)?;
    m.add_function(wrap_pyfunction!(blake3_hex, m)?)?;
    m.add_function(wrap_pyfunction!(base64_decoded_len, m)?)?;
    m.add_function(wrap_pyfunction!(base64_decode, m)?)?;
    m.add_function(wrap_pyfunction!(percent_decoded_len, m)?)?;
    m.add_function(wrap_pyfunction!(percent_decode, m)?)?;
    m.add_function(wrap_pyfunction!(parallel_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(json_shape, m)?)?;
    m.add_function(wrap_pyfunction!(json_ids, m)?)?;
    m.add_function(wrap_pyfunction!(token_indices, m)?)?;
    m.add_function(wrap_pyfunction!(expand_repeats, m)?)?;
    m.add_function(wrap_pyfunction!(first_unwrapped, m)?)?;
    m.add_function(wrap_pyfunction!(mrope_positions, m)?)?;
    features::register(m)?;
    m.add("DEFAULT_MAX_PIXELS", limits::MAX_IMAGE_PIXELS)?;
    m.add("DEFAULT_MAX_SIDE", limits::MAX_IMAGE_SIDE)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
