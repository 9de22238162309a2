"""The answer's two body formats and their inverse, so a client rebuilds the very `MmOutput`
the in-process pipeline returns.

safetensors (the default): the one output layout of `sglang_mm_core._outputs`, the same as the
CLI's ``--out`` files, written and read by that module (re-exported here): the encoder hands
back the header plus views of the arrays, the body is never joined into one buffer.

JSON (``?format=json``, for debugging and small images): the same content with tensors as
``{"dtype", "shape", "data"}`` (nested lists; bfloat16 as its uint16 bits)."""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .._carriers import DType, MmOutput, Tensor
from .._outputs import (
    _NUMPY_FOR_TAG,
    FORMAT_VERSION,
    decode_safetensors,
    encode_safetensors,
    item_from_meta,
    item_meta,
    output_tensors,
    read_safetensors,
)
from .._positions import MRope, Rope1D
from ..errors import CodecError, LimitError

SAFETENSORS_MEDIA_TYPE = "application/octet-stream"
JSON_MEDIA_TYPE = "application/json"
_JSON_STEP = 1 << 15  # elements per json.dumps call: short GIL holds, memory near the answer
_SEP = (",", ":")


def _tolist(arr: np.ndarray) -> Any:
    return arr.tolist()


def output_json(out: MmOutput, data: Any = _tolist) -> dict[str, Any]:
    """The JSON form of one output; ``data(array)`` is what stands for each array's data
    (its nested lists by default)."""

    def _tensor_json(t: Tensor) -> dict[str, Any]:
        return {"dtype": t.dtype, "shape": list(t.shape), "data": data(t.array)}

    if isinstance(out.positions, MRope):
        positions: dict[str, Any] = {
            "kind": "MRope",
            "delta": out.positions.delta,
            "positions": data(out.positions.positions),
        }
    else:
        positions = {"kind": "Rope1D", "length": len(out.input_ids)}
    return {
        "format_version": FORMAT_VERSION,
        "rid": out.rid,
        "family": out.family,
        "spec_fingerprint": out.spec_fingerprint,
        "input_ids": data(out.input_ids),
        "offsets": [list(o) for o in out.offsets],
        "positions": positions,
        "items": [
            {
                "hash": it.hash,
                **item_meta(it),
                # The JSON form is the compatible one: a compact feature is sent expanded.
                "feature": _tensor_json(
                    it.feature if isinstance(it.feature, Tensor) else it.feature.expand()
                ),
                "aux": {k: _tensor_json(t) for k, t in sorted(it.aux.items())},
            }
            for it in out.items
        ],
    }


def encode_json(out: MmOutput) -> bytes:
    return b"".join(encode_json_chunks(out))


def _min_json_bytes(arr: np.ndarray) -> int:
    """A lower bound of an array's JSON size: ``0,`` per integer, ``0.0,`` per float."""
    return int(arr.size) * (4 if arr.dtype.kind == "f" else 2)


def json_size_floor(out: MmOutput) -> int:
    """A lower bound of the JSON answer's size, known without encoding anything."""
    arrays = [out.input_ids]
    if isinstance(out.positions, MRope):
        arrays.append(out.positions.positions)
    floats = 0  # compact features are answered expanded: one float per element
    for it in out.items:
        if isinstance(it.feature, Tensor):
            arrays.append(it.feature.array)
        else:
            floats += math.prod(it.feature.shape)
        arrays.extend(t.array for t in it.aux.values())
    return 4 * floats + sum(_min_json_bytes(np.asarray(a)) for a in arrays)


def _over_json_cap(size: int, cap: int, how: str) -> LimitError:
    return LimitError(
        f"the JSON answer {how} {size} bytes, over the server's JSON cap of {cap} bytes; "
        "ask for the default safetensors answer (no ?format=json) instead",
        limit="max_json_bytes",
        limit_value=cap,
        value=size,
    )


def _array_json(arr: np.ndarray) -> Iterator[bytes]:
    """An array as nested JSON lists, a slice at a time (each a short `json.dumps`)."""
    if arr.ndim == 0 or arr.size <= _JSON_STEP:
        yield json.dumps(arr.tolist(), separators=_SEP).encode()
        return
    row = arr.size // len(arr)
    yield b"["
    if row <= _JSON_STEP:
        step = max(1, _JSON_STEP // row)
        for k in range(0, len(arr), step):
            if k:
                yield b","
            yield json.dumps(arr[k : k + step].tolist(), separators=_SEP)[1:-1].encode()
    else:
        for i in range(len(arr)):
            if i:
                yield b","
            yield from _array_json(arr[i])
    yield b"]"


def encode_json_chunks(out: MmOutput, cap: int | None = None) -> list[bytes]:
    """The JSON answer as buffers written back to back (the same bytes as one `json.dumps`
    of `output_json`). Over ``cap`` bytes it raises `LimitError` (limit ``max_json_bytes``),
    from a lower bound before encoding, else as soon as the encoded part passes it."""
    if cap is not None and (floor := json_size_floor(out)) > cap:
        raise _over_json_cap(floor, cap, "would be at least")
    mark = "t" + secrets.token_hex(12)  # cannot collide with a client's rid
    arrays: list[np.ndarray] = []

    def placeholder(arr: np.ndarray) -> str:
        arrays.append(arr)
        return f"{mark}{len(arrays) - 1}"

    doc = output_json(out, placeholder)
    head = json.dumps(doc, separators=_SEP)
    parts = head.split(f'"{mark}')
    chunks = [parts[0].encode()]
    size = len(chunks[0])
    for part in parts[1:]:
        index, _, rest = part.partition('"')
        for chunk in _array_json(arrays[int(index)]):
            chunks.append(chunk)
            size += len(chunk)
            if cap is not None and size > cap:
                raise _over_json_cap(size, cap, "passed")
        chunks.append(rest.encode())
        size += len(chunks[-1])
    if cap is not None and size > cap:
        raise _over_json_cap(size, cap, "is")
    return chunks


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
            item_from_meta(
                it,
                _tensor_from_json(it["feature"]),
                {k: _tensor_from_json(t) for k, t in it["aux"].items()},
                int(it["hash"]),
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
    "FORMAT_VERSION",
    "JSON_MEDIA_TYPE",
    "SAFETENSORS_MEDIA_TYPE",
    "CodecError",
    "decode_json",
    "decode_safetensors",
    "encode_json",
    "encode_json_chunks",
    "encode_safetensors",
    "json_size_floor",
    "output_json",
    "output_tensors",
    "read_safetensors",
]
