"""The answer's two body formats and their inverse, so a client rebuilds the very `MmOutput`
the in-process pipeline returns.

safetensors (the default): the one output layout of `sglang_mm_core._outputs`, the same as the
CLI's ``--out`` files, written and read by that module (re-exported here): the encoder hands
back the header plus views of the arrays, the body is never joined into one buffer.

JSON (``?format=json``, for debugging and small images): the same content with tensors as
``{"dtype", "shape", "data"}`` (nested lists; bfloat16 as its uint16 bits)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .._carriers import DType, MmOutput, Tensor
from .._compact import CompactTensor
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


_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)


def _structure_bytes(shape: tuple[int, ...]) -> int:
    """The brackets and commas of an array of ``shape`` as nested JSON lists."""
    lists, total = 1, 0
    for d in shape:  # each list of a level: its brackets and the commas between its members
        total += lists * (2 + max(d - 1, 0))
        lists *= d
    return total


def _int_text_bytes(arr: np.ndarray) -> int:
    """The digits (and signs) of an integer array's values, exactly."""
    flat = np.asarray(arr).ravel().astype(np.int64, copy=False)
    if not flat.size:
        return 0
    digits = np.searchsorted(_POW10, np.abs(flat), side="right") + 1
    return int(digits.sum()) + int(np.count_nonzero(flat < 0))


def _float_text_lens(values: np.ndarray) -> np.ndarray:
    """How long each value of a small float array is in JSON (``json.dumps`` of the value)."""
    return np.array([len(json.dumps(v)) for v in values.tolist()], dtype=np.int64)


def _array_json_bytes(arr: np.ndarray) -> int:
    """An array's JSON size: exact for integers (bfloat16 is sent as its integer bits), a lower
    bound (``0.0`` per value) for floats, whose text is only known by formatting them."""
    arr = np.asarray(arr)
    text = 3 * arr.size if arr.dtype.kind == "f" else _int_text_bytes(arr)
    return _structure_bytes(arr.shape) + text


def _compact_json_bytes(f: CompactTensor) -> int:
    """A compact feature's JSON size, exactly, from its codes and tables alone: each value's
    text is its table entry's, so a count of the codes per channel is enough (one pass over
    the codes, nothing expanded or formatted past the tables)."""
    v, ax = f.view_shape, f.channel_axis
    mask = f.pad_mask()
    ints = f.dtype == "bfloat16"
    text = 0
    for c in range(v[ax]):
        codes = f.codes[(slice(None),) * ax + (slice(c, c + 1),)]
        lens = (
            np.array([len(str(b)) for b in f.luts[c].tolist()], dtype=np.int64)
            if ints
            else _float_text_lens(f.luts[c])
        )
        if mask is None:
            text += int(np.bincount(codes.ravel(), minlength=256) @ lens)
            continue
        assert f.pad is not None
        padded = np.broadcast_to(mask, codes.shape)
        kept = codes[~padded]
        n_pad = codes.size - kept.size
        pad_len = len(str(int(f.pad[c]))) if ints else len(json.dumps(float(f.pad[c])))
        text += int(np.bincount(kept, minlength=256) @ lens) + n_pad * pad_len
    return _structure_bytes(f.shape) + text * f.repeats


def json_size_floor(out: MmOutput) -> int:
    """A lower bound of the JSON answer's size, known without encoding anything: exact for
    integer arrays and for compact features (their values' text comes from the tables), the
    brackets and commas plus ``0.0`` per value for full float features."""
    arrays = [out.input_ids]
    if isinstance(out.positions, MRope):
        arrays.append(out.positions.positions)
    total = sum(_array_json_bytes(a) for a in arrays)
    for it in out.items:
        f = it.feature
        total += _array_json_bytes(f.array) if isinstance(f, Tensor) else _compact_json_bytes(f)
        total += sum(_array_json_bytes(t.array) for t in it.aux.values())
    return total


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
