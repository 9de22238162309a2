"""The one file layout of an `MmOutput`: what ``sglang-mm run --out`` writes, what the server
answers with, and `load_output`, the one reader of both (docs/architecture.md, "Output files").

Tensors: ``input_ids`` (int64 ``[L]``), ``positions`` (int64 ``[3, L]``, MRoPE only),
``items.{i}.feature`` and ``items.{i}.{aux name}``. Metadata, all strings (JSON where
structured): ``format_version`` (``"1"``), ``family``, ``spec_fingerprint``, ``rid`` (when set),
``offsets``, ``hashes``, ``positions`` (``Rope1D`` / ``MRope``), ``mrope_delta`` (MRoPE),
``length``, ``items`` (``[{height, width, grid, tokens, modality}]``, a video's with its
``seconds_per_grid_t``) and ``dtypes`` (the tag of every
tensor). A compact feature (`CompactTensor`) is stored as ``items.{i}.feature.codes`` (uint8),
``.luts`` and ``.pad`` (its dtype) instead of ``items.{i}.feature``, with its expansion rule
in the ``compact`` metadata (``{"i": {dtype, shape, channel_axis, repeat_axis, repeats,
pad_rules}}``); `load_output` gives it back as a `CompactTensor`. bfloat16 is stored as its
raw 16 bits: dtype ``BF16`` in safetensors (torch loads it as such), ``uint16`` in ``.npz``
(numpy has no bfloat16), the ``dtypes`` tag telling them apart.

safetensors bodies are laid out widest dtype first after an 8-byte aligned header, so every
tensor is aligned and is read back as a view, without a copy; the writer hands back the header
plus views of the arrays, never one joined buffer."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ._carriers import Geometry, MmItem, MmOutput, Tensor
from ._compact import CompactTensor
from ._positions import MRope, Rope1D
from .errors import CodecError, MmRequestError

FORMAT_VERSION = "1"

_ST_DTYPE: dict[str, str] = {
    "uint8": "U8",
    "uint16": "U16",
    "int32": "I32",
    "int64": "I64",
    "float32": "F32",
    "bfloat16": "BF16",
}
_TAG_FOR_ST = {v: k for k, v in _ST_DTYPE.items()}
_NUMPY_FOR_TAG: dict[str, np.dtype[Any]] = {
    "uint8": np.dtype("<u1"),
    "uint16": np.dtype("<u2"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "float32": np.dtype("<f4"),
    "bfloat16": np.dtype("<u2"),
}
_ZIP_MAGIC = b"PK\x03\x04"


# -- writing -------------------------------------------------------------------------------
def item_meta(item: MmItem) -> dict[str, Any]:
    """An item's metadata in both answer forms: its geometry, tokens and modality (and a
    video's ``seconds_per_grid_t``, which time-aware positions read)."""
    g = item.geometry
    meta: dict[str, Any] = {
        "height": g.height,
        "width": g.width,
        "grid": list(g.grid),
        "tokens": item.tokens,
        "modality": item.modality,
    }
    if g.seconds_per_grid_t is not None:
        meta["seconds_per_grid_t"] = g.seconds_per_grid_t
    return meta


def item_from_meta(
    im: Mapping[str, Any], feature: Tensor | CompactTensor, aux: Mapping[str, Tensor], h: int
) -> MmItem:
    """The `MmItem` of `item_meta`'s metadata and its tensors."""
    seconds = im.get("seconds_per_grid_t")
    geometry = Geometry(
        int(im["height"]),
        int(im["width"]),
        tuple(int(n) for n in im["grid"]),
        None if seconds is None else float(seconds),
    )
    modality = str(im["modality"])
    if modality not in ("image", "video"):
        raise CodecError(f"item modality {modality!r} is not 'image' or 'video'")
    return MmItem(feature, aux, int(h), geometry, int(im["tokens"]), modality)


def output_tensors(out: MmOutput) -> tuple[list[tuple[str, Tensor]], dict[str, str]]:
    """The named tensors and the string metadata of one output: the whole layout."""
    tensors: list[tuple[str, Tensor]] = [("input_ids", Tensor(out.input_ids, "int64"))]
    if isinstance(out.positions, MRope):
        tensors.append(("positions", Tensor(out.positions.positions, "int64")))
    items_meta = []
    compact: dict[str, Any] = {}
    for i, item in enumerate(out.items):
        f = item.feature
        if isinstance(f, CompactTensor):
            compact[str(i)] = f.layout()
            tensors.append((f"items.{i}.feature.codes", Tensor(f.codes, "uint8")))
            tensors.append(
                (f"items.{i}.feature.luts", Tensor(np.ascontiguousarray(f.luts), f.dtype))
            )
            if f.pad is not None:
                tensors.append(
                    (f"items.{i}.feature.pad", Tensor(np.ascontiguousarray(f.pad), f.dtype))
                )
        else:
            tensors.append((f"items.{i}.feature", f))
        for name, t in sorted(item.aux.items()):
            tensors.append((f"items.{i}.{name}", t))
        items_meta.append(item_meta(item))
    meta = {
        "format_version": FORMAT_VERSION,
        "family": out.family,
        "spec_fingerprint": out.spec_fingerprint,
        "offsets": json.dumps([list(o) for o in out.offsets]),
        "hashes": json.dumps(out.hashes),
        "positions": type(out.positions).__name__,
        "length": str(len(out.input_ids)),
        "items": json.dumps(items_meta),
        "dtypes": json.dumps({name: t.dtype for name, t in tensors}),
    }
    if compact:
        meta["compact"] = json.dumps(compact)
    if isinstance(out.positions, MRope):
        meta["mrope_delta"] = str(out.positions.delta)
    if out.rid is not None:
        meta["rid"] = out.rid
    return tensors, meta


def _le_contiguous(array: npt.NDArray[Any], tag: str) -> npt.NDArray[Any]:
    return np.ascontiguousarray(array, dtype=_NUMPY_FOR_TAG[tag])


def encode_safetensors(out: MmOutput) -> list[memoryview | bytes]:
    """The safetensors form as buffers to write back to back: the header, then one view per
    tensor (no tensor bytes are copied)."""
    tensors, meta = output_tensors(out)
    arrays = [(name, _le_contiguous(t.array, t.dtype), t.dtype) for name, t in tensors]
    # Widest first, so with an 8-aligned header every tensor starts at a multiple of its width.
    arrays.sort(key=lambda a: -a[1].dtype.itemsize)
    header: dict[str, Any] = {"__metadata__": meta}
    pos = 0
    for name, arr, tag in arrays:
        header[name] = {
            "dtype": _ST_DTYPE[tag],
            "shape": list(arr.shape),
            "data_offsets": [pos, pos + arr.nbytes],
        }
        pos += arr.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    chunks: list[memoryview | bytes] = [struct.pack("<Q", len(text)) + text]
    chunks += [arr.data.cast("B") for _, arr, _ in arrays if arr.nbytes]
    return chunks


def output_arrays(out: MmOutput) -> tuple[dict[str, npt.NDArray[Any]], dict[str, str]]:
    """The layout as plain numpy arrays (bfloat16 as its uint16 bits) and metadata: the
    ``.npz`` form."""
    tensors, meta = output_tensors(out)
    return {name: _le_contiguous(t.array, t.dtype) for name, t in tensors}, meta


def save_output(out: MmOutput, path: str | Path) -> None:
    """Write one output as ``.safetensors`` or ``.npz`` (by extension), in the layout above."""
    path = Path(path)
    if path.suffix == ".safetensors":
        with open(path, "wb") as f:
            for chunk in encode_safetensors(out):
                f.write(chunk)
    elif path.suffix == ".npz":
        arrays, meta = output_arrays(out)
        np.savez(path, **arrays, __metadata__=np.array(json.dumps(meta)))  # type: ignore[arg-type]
    else:
        raise MmRequestError(f"--out must end in .safetensors or .npz, got {str(path)!r}")


# -- reading -------------------------------------------------------------------------------
def _view(arr: npt.NDArray[Any], tag: str, name: str) -> Tensor:
    want = _NUMPY_FOR_TAG.get(tag)
    if want is None:
        raise CodecError(f"tensor {name!r} has an unknown dtype tag {tag!r}")
    if arr.dtype.newbyteorder("<") != want:
        raise CodecError(f"tensor {name!r} tagged {tag} is stored as {arr.dtype}")
    return Tensor(arr.astype(want.newbyteorder("="), copy=False), tag)  # type: ignore[arg-type]


def read_safetensors(
    body: bytes | bytearray | memoryview,
) -> tuple[dict[str, Tensor], dict[str, str]]:
    """Every tensor of a safetensors body as a zero-copy view, and its metadata. Tensors take
    the tag of the ``dtypes`` metadata when there is one (``U16`` holding bfloat16 bits)."""
    view = memoryview(body).cast("B")
    if len(view) < 8:
        raise CodecError("safetensors body shorter than its 8-byte header length")
    (n,) = struct.unpack_from("<Q", view, 0)
    if n > len(view) - 8:
        raise CodecError(f"safetensors header of {n} bytes overruns a {len(view)}-byte body")
    try:
        header = json.loads(bytes(view[8 : 8 + n]))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CodecError(f"safetensors header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise CodecError("safetensors header is not a JSON object")
    meta = {str(k): str(v) for k, v in (header.pop("__metadata__", None) or {}).items()}
    tags = _dtypes(meta)
    data = view[8 + n :]
    tensors: dict[str, Tensor] = {}
    for name, info in header.items():
        try:
            stored = _TAG_FOR_ST[info["dtype"]]
            start, end = (int(v) for v in info["data_offsets"])
            shape = tuple(int(d) for d in info["shape"])
        except (KeyError, TypeError, ValueError) as e:
            raise CodecError(f"safetensors entry {name!r} is malformed: {e!r}") from None
        dtype = _NUMPY_FOR_TAG[stored]
        count = int(np.prod(shape, dtype=np.int64))
        if not (0 <= start <= end <= len(data)) or end - start != count * dtype.itemsize:
            raise CodecError(f"safetensors entry {name!r} has a bad byte range")
        arr = np.frombuffer(data, dtype=dtype, count=count, offset=start).reshape(shape)
        tensors[name] = _view(arr, tags.get(name, stored), name)
    return tensors, meta


def _dtypes(meta: Mapping[str, str]) -> dict[str, str]:
    raw = meta.get("dtypes")
    if raw is None:
        return {}
    try:
        tags = json.loads(raw)
    except json.JSONDecodeError as e:
        raise CodecError(f"metadata dtypes is not JSON: {e}") from None
    if not isinstance(tags, dict):
        raise CodecError("metadata dtypes is not a JSON object")
    return {str(k): str(v) for k, v in tags.items()}


def _read_npz(data: bytes | bytearray | memoryview) -> tuple[dict[str, Tensor], dict[str, str]]:
    try:
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise CodecError(f"not a readable .npz file: {e}") from None
    raw = arrays.pop("__metadata__", None)
    if raw is None:
        raise CodecError(".npz file without its __metadata__ entry")
    try:
        meta = {str(k): str(v) for k, v in json.loads(str(raw)).items()}
    except (json.JSONDecodeError, AttributeError) as e:
        raise CodecError(f".npz __metadata__ is not a JSON object: {e}") from None
    tags = _dtypes(meta)
    tensors = {}
    for name, arr in arrays.items():
        tag = tags.get(name, str(arr.dtype))
        tensors[name] = _view(np.ascontiguousarray(arr), tag, name)
    return tensors, meta


def _positions(kind: str, length: int, tensors: Mapping[str, Tensor], delta: Any) -> Any:
    if kind == "MRope":
        if "positions" not in tensors or delta is None:
            raise CodecError("MRope output without its positions tensor or mrope_delta")
        return MRope(tensors["positions"].array, int(delta))
    if kind == "Rope1D":
        return Rope1D(length)
    raise CodecError(f"unknown positions kind {kind!r}")


def output_from(tensors: Mapping[str, Tensor], meta: Mapping[str, str]) -> MmOutput:
    """The `MmOutput` of a layout's tensors and metadata."""
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise CodecError(
            f"output format_version {version!r} is not one this release reads ({FORMAT_VERSION!r})"
        )
    try:
        ids = tensors["input_ids"].array
        hashes = json.loads(meta["hashes"])
        offsets = [(int(s), int(e)) for s, e in json.loads(meta["offsets"])]
        items_meta: list[dict[str, Any]] = json.loads(meta["items"])
        positions = _positions(meta["positions"], len(ids), tensors, meta.get("mrope_delta"))
        compact = json.loads(meta.get("compact", "{}"))
        items = []
        for i, (im, h) in enumerate(zip(items_meta, hashes, strict=True)):
            prefix = f"items.{i}."
            fname = prefix + "feature"
            aux = {
                k[len(prefix) :]: t
                for k, t in tensors.items()
                if k.startswith(prefix) and k != fname and not k.startswith(fname + ".")
            }
            feature = _compact(compact[str(i)], tensors, fname) if str(i) in compact else None
            items.append(item_from_meta(im, feature or tensors[fname], aux, h))
        return MmOutput(
            input_ids=ids,
            items=items,
            offsets=offsets,
            positions=positions,
            family=meta["family"],
            spec_fingerprint=meta["spec_fingerprint"],
            rid=meta.get("rid"),
        )
    except CodecError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise CodecError(f"output is missing or has a bad field: {e!r}") from None


def _compact(layout: Any, tensors: Mapping[str, Tensor], name: str) -> CompactTensor:
    """The compact feature ``name`` from its tensors and its ``compact`` metadata entry."""
    pad = tensors.get(name + ".pad")
    try:
        return CompactTensor.from_layout(
            layout,
            tensors[name + ".codes"].array,
            tensors[name + ".luts"].array,
            None if pad is None else pad.array,
        )
    except ValueError as e:
        raise CodecError(f"compact feature {name!r} is malformed: {e}") from None


def decode_safetensors(body: bytes | bytearray | memoryview) -> MmOutput:
    """The `MmOutput` of a safetensors body (its arrays are views of ``body``)."""
    return output_from(*read_safetensors(body))


def load_output(source: str | Path | bytes | bytearray | memoryview) -> MmOutput:
    """Read an output back: a ``.safetensors`` or ``.npz`` file (by path), or the bytes of one
    (a server answer, a file's content). A safetensors body
    given as bytes is viewed, not copied."""
    if isinstance(source, (str, Path)):
        try:
            data: bytes | bytearray | memoryview = Path(source).read_bytes()
        except OSError as e:
            raise CodecError(f"cannot read output file {str(source)!r}: {e}") from None
    else:
        data = source
    head = bytes(memoryview(data).cast("B")[:4])
    if head == _ZIP_MAGIC:
        return output_from(*_read_npz(data))
    return decode_safetensors(data)


__all__ = [
    "FORMAT_VERSION",
    "CodecError",
    "decode_safetensors",
    "encode_safetensors",
    "load_output",
    "output_arrays",
    "output_from",
    "output_tensors",
    "read_safetensors",
    "save_output",
]
