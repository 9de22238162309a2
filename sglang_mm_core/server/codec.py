"""The answer's two body formats and their inverse, so a client rebuilds the very `MmOutput`
the in-process pipeline returns.

safetensors (the default): an 8-byte little-endian header length, a JSON header (tensor name ->
dtype, shape, byte range, plus ``__metadata__`` of strings), then the raw tensor bytes. Tensor
names follow the CLI's ``--out`` files (``input_ids``, ``positions``, ``items.{i}.feature``,
``items.{i}.{aux}``); bfloat16 is written as ``BF16`` so torch loads it as such. Tensors are
laid out widest dtype first after an 8-byte aligned header, so every tensor is aligned and a
reader can map it without a copy. The encoder hands back the header plus views of the arrays:
the body is never joined into one buffer on the server.

JSON (``?format=json``, for debugging and small images): the same content with tensors as
``{"dtype", "shape", "data"}`` (nested lists; bfloat16 as its uint16 bits)."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from .._carriers import DType, Geometry, MmItem, MmOutput, Tensor
from .._positions import MRope, Rope1D

FORMAT_VERSION = "1"
SAFETENSORS_MEDIA_TYPE = "application/octet-stream"
JSON_MEDIA_TYPE = "application/json"

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


class CodecError(ValueError):
    """A body that is not a well-formed sglang-mm answer."""


def _le_contiguous(array: npt.NDArray[Any], tag: str) -> npt.NDArray[Any]:
    want = _NUMPY_FOR_TAG[tag]
    return np.ascontiguousarray(array, dtype=want)


def output_tensors(out: MmOutput) -> tuple[list[tuple[str, Tensor]], dict[str, str]]:
    """The named tensors and string metadata of one output (the safetensors content)."""
    tensors: list[tuple[str, Tensor]] = [("input_ids", Tensor(out.input_ids, "int64"))]
    if isinstance(out.positions, MRope):
        tensors.append(("positions", Tensor(out.positions.positions, "int64")))
    items_meta = []
    for i, item in enumerate(out.items):
        tensors.append((f"items.{i}.feature", item.feature))
        for name, t in sorted(item.aux.items()):
            tensors.append((f"items.{i}.{name}", t))
        g = item.geometry
        items_meta.append(
            {"height": g.height, "width": g.width, "grid": list(g.grid), "tokens": item.tokens}
        )
    meta = {
        "format_version": FORMAT_VERSION,
        "family": out.family,
        "spec_fingerprint": out.spec_fingerprint,
        "offsets": json.dumps([list(o) for o in out.offsets]),
        "hashes": json.dumps(out.hashes),
        "positions": type(out.positions).__name__,
        "length": str(len(out.input_ids)),
        "items": json.dumps(items_meta),
    }
    if isinstance(out.positions, MRope):
        meta["mrope_delta"] = str(out.positions.delta)
    if out.rid is not None:
        meta["rid"] = out.rid
    return tensors, meta


def encode_safetensors(out: MmOutput) -> list[memoryview | bytes]:
    """The safetensors body as buffers to write back to back: the header, then one view per
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


def read_safetensors(
    body: bytes | bytearray | memoryview,
) -> tuple[dict[str, Tensor], dict[str, str]]:
    """Every tensor of a safetensors body as a zero-copy view, and its metadata."""
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
    meta = header.pop("__metadata__", None) or {}
    data = view[8 + n :]
    tensors: dict[str, Tensor] = {}
    for name, info in header.items():
        try:
            tag = _TAG_FOR_ST[info["dtype"]]
            start, end = (int(v) for v in info["data_offsets"])
            shape = tuple(int(d) for d in info["shape"])
        except (KeyError, TypeError, ValueError) as e:
            raise CodecError(f"safetensors entry {name!r} is malformed: {e!r}") from None
        dtype = _NUMPY_FOR_TAG[tag]
        count = int(np.prod(shape, dtype=np.int64))
        if not (0 <= start <= end <= len(data)) or end - start != count * dtype.itemsize:
            raise CodecError(f"safetensors entry {name!r} has a bad byte range")
        arr = np.frombuffer(data, dtype=dtype, count=count, offset=start).reshape(shape)
        tensors[name] = Tensor(arr.astype(dtype.newbyteorder("="), copy=False), tag)  # type: ignore[arg-type]
    return tensors, {str(k): str(v) for k, v in meta.items()}


def _positions(kind: str, length: int, tensors: Mapping[str, Tensor], delta: Any) -> Any:
    if kind == "MRope":
        if "positions" not in tensors or delta is None:
            raise CodecError("MRope answer without its positions tensor or mrope_delta")
        return MRope(tensors["positions"].array, int(delta))
    if kind == "Rope1D":
        return Rope1D(length)
    raise CodecError(f"unknown positions kind {kind!r}")


def decode_safetensors(body: bytes | bytearray | memoryview) -> MmOutput:
    """The `MmOutput` a safetensors answer carries (arrays are views of ``body``)."""
    tensors, meta = read_safetensors(body)
    try:
        ids = tensors["input_ids"].array
        items_meta = json.loads(meta["items"])
        hashes = json.loads(meta["hashes"])
        offsets = [(int(s), int(e)) for s, e in json.loads(meta["offsets"])]
        positions = _positions(meta["positions"], len(ids), tensors, meta.get("mrope_delta"))
        items = []
        for i, (im, h) in enumerate(zip(items_meta, hashes, strict=True)):
            prefix = f"items.{i}."
            aux = {
                k[len(prefix) :]: t
                for k, t in tensors.items()
                if k.startswith(prefix) and k != prefix + "feature"
            }
            geometry = Geometry(int(im["height"]), int(im["width"]), tuple(im["grid"]))
            items.append(
                MmItem(tensors[prefix + "feature"], aux, int(h), geometry, int(im["tokens"]))
            )
        return MmOutput(
            input_ids=ids,
            items=items,
            offsets=offsets,
            positions=positions,
            family=meta["family"],
            spec_fingerprint=meta["spec_fingerprint"],
            rid=meta.get("rid"),
        )
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, CodecError):
            raise
        raise CodecError(f"safetensors answer is missing or has a bad field: {e!r}") from None


def _tensor_json(t: Tensor) -> dict[str, Any]:
    return {"dtype": t.dtype, "shape": list(t.shape), "data": t.array.tolist()}


def output_json(out: MmOutput) -> dict[str, Any]:
    """The JSON form of one output."""
    if isinstance(out.positions, MRope):
        positions: dict[str, Any] = {
            "kind": "MRope",
            "delta": out.positions.delta,
            "positions": out.positions.positions.tolist(),
        }
    else:
        positions = {"kind": "Rope1D", "length": len(out.input_ids)}
    return {
        "format_version": FORMAT_VERSION,
        "rid": out.rid,
        "family": out.family,
        "spec_fingerprint": out.spec_fingerprint,
        "input_ids": out.input_ids.tolist(),
        "offsets": [list(o) for o in out.offsets],
        "positions": positions,
        "items": [
            {
                "hash": it.hash,
                "tokens": it.tokens,
                "geometry": {
                    "height": it.geometry.height,
                    "width": it.geometry.width,
                    "grid": list(it.geometry.grid),
                },
                "feature": _tensor_json(it.feature),
                "aux": {k: _tensor_json(t) for k, t in sorted(it.aux.items())},
            }
            for it in out.items
        ],
    }


def encode_json(out: MmOutput) -> bytes:
    return json.dumps(output_json(out), separators=(",", ":")).encode()


def _tensor_from_json(doc: Mapping[str, Any]) -> Tensor:
    tag: DType = doc["dtype"]
    if tag not in _NUMPY_FOR_TAG:
        raise CodecError(f"unknown tensor dtype {tag!r}")
    arr = np.array(doc["data"], dtype=_NUMPY_FOR_TAG[tag]).reshape(doc["shape"])
    return Tensor(np.ascontiguousarray(arr, dtype=_NUMPY_FOR_TAG[tag].newbyteorder("=")), tag)


def decode_json(body: bytes | str | Mapping[str, Any]) -> MmOutput:
    """The `MmOutput` of a JSON answer."""
    try:
        doc = body if isinstance(body, Mapping) else json.loads(body)
        pos = doc["positions"]
        ids = np.array(doc["input_ids"], dtype=np.int64)
        if pos["kind"] == "MRope":
            positions: MRope | Rope1D = MRope(
                np.array(pos["positions"], dtype=np.int64).reshape(3, len(ids)), int(pos["delta"])
            )
        else:
            positions = Rope1D(len(ids))
        items = [
            MmItem(
                _tensor_from_json(it["feature"]),
                {k: _tensor_from_json(t) for k, t in it["aux"].items()},
                int(it["hash"]),
                Geometry(
                    int(it["geometry"]["height"]),
                    int(it["geometry"]["width"]),
                    tuple(it["geometry"]["grid"]),
                ),
                int(it["tokens"]),
            )
            for it in doc["items"]
        ]
        return MmOutput(
            input_ids=ids,
            items=items,
            offsets=[(int(s), int(e)) for s, e in doc["offsets"]],
            positions=positions,
            family=doc["family"],
            spec_fingerprint=doc["spec_fingerprint"],
            rid=doc.get("rid"),
        )
    except CodecError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise CodecError(f"JSON answer is missing or has a bad field: {e!r}") from None


__all__ = [
    "JSON_MEDIA_TYPE",
    "SAFETENSORS_MEDIA_TYPE",
    "CodecError",
    "decode_json",
    "decode_safetensors",
    "encode_json",
    "encode_safetensors",
    "output_json",
    "output_tensors",
    "read_safetensors",
]
