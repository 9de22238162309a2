"""The answer's two body formats and their inverse, so a client rebuilds the very `MmOutput`
the in-process pipeline returns.

safetensors (the default): the one output layout of `sglang_mm_core.outputs`, the same as the
CLI's ``--out`` files, written and read by that module (re-exported here): the encoder hands
back the header plus views of the arrays, the body is never joined into one buffer.

JSON (``?format=json``, for debugging and small images): the same content with tensors as
``{"dtype", "shape", "data"}`` (nested lists; bfloat16 as its uint16 bits)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._carriers import DType, Geometry, MmItem, MmOutput, Tensor
from .._positions import MRope, Rope1D
from ..errors import CodecError
from ..outputs import (
    _NUMPY_FOR_TAG,
    FORMAT_VERSION,
    decode_safetensors,
    encode_safetensors,
    output_tensors,
    read_safetensors,
)

SAFETENSORS_MEDIA_TYPE = "application/octet-stream"
JSON_MEDIA_TYPE = "application/json"


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
    "FORMAT_VERSION",
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
