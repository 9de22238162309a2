"""The row layout of the output shards, and the two conversions: a pipeline result (or its
error) to a row, and a stored row back to an `MmOutput`.

Columns (one row per manifest row, in manifest order):

- ``index`` (int64, the manifest row), ``id`` (string);
- ``error``: null, or ``{type, message, item, modality}`` (the `MmError` class name, its
  message, the item it is attributed to and that item's modality);
- ``tokens`` (int64, the expanded prompt length), ``item_tokens`` (list<int64>) and
  ``modalities`` (list<string>: ``"image"`` or ``"video"``), per item in prompt order;
- full mode also: ``input_ids`` (list<int64>, expanded), ``offsets`` (list of inclusive
  ``[start, end]`` pairs), ``mrope_positions`` (list of the 3 rows t, h, w; null for 1-D RoPE)
  and ``mrope_delta``, ``item_hashes`` (list<uint64>), and ``items``: per item its geometry
  (``height``, ``width``, ``grid``, a video's ``seconds_per_grid_t``), its feature
  (``feature``: ``{dtype, shape, data}``, or under the compact form ``compact``: ``{layout,
  codes, luts, pad}``, layout being the JSON expansion rule of `CompactTensor.layout`) and
  its ``aux`` tensors (``{name, dtype, shape, data}``). Tensor bytes are C-order,
  little-endian; bfloat16 as its raw 16 bits.

The file's schema metadata ``sglang_mm`` holds the job's family, spec fingerprint and mode."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._carriers import Geometry, MmItem, MmOutput, Tensor, TokenCount
from .._compact import CompactTensor
from .._outputs import _NUMPY_FOR_TAG
from .._positions import MRope, Rope1D
from ..errors import MmError

ROW_FORMAT_VERSION = "1"


def schema(pa: Any, *, count_only: bool) -> Any:
    """The Arrow schema of a shard (``pa`` is the pyarrow module)."""
    error = pa.struct(
        [
            ("type", pa.string()),
            ("message", pa.string()),
            ("item", pa.int64()),
            ("modality", pa.string()),
        ]
    )
    head = [
        ("index", pa.int64()),
        ("id", pa.string()),
        ("error", error),
        ("tokens", pa.int64()),
        ("item_tokens", pa.list_(pa.int64())),
        ("modalities", pa.list_(pa.string())),
    ]
    if count_only:
        return pa.schema(head)
    tensor = [("dtype", pa.string()), ("shape", pa.list_(pa.int64())), ("data", pa.large_binary())]
    compact = pa.struct(
        [
            ("layout", pa.string()),
            ("codes", pa.struct(tensor)),
            ("luts", pa.struct(tensor)),
            ("pad", pa.struct(tensor)),
        ]
    )
    item = pa.struct(
        [
            ("height", pa.int64()),
            ("width", pa.int64()),
            ("grid", pa.list_(pa.int64())),
            ("seconds_per_grid_t", pa.float64()),
            ("feature", pa.struct(tensor)),
            ("compact", compact),
            ("aux", pa.list_(pa.struct([("name", pa.string()), *tensor]))),
        ]
    )
    return pa.schema(
        [
            *head,
            ("input_ids", pa.list_(pa.int64())),
            ("offsets", pa.list_(pa.list_(pa.int64(), 2))),
            ("mrope_positions", pa.list_(pa.list_(pa.int64()))),
            ("mrope_delta", pa.int64()),
            ("item_hashes", pa.list_(pa.uint64())),
            ("items", pa.list_(item)),
        ]
    )


def _tensor(array: Any, dtype: str) -> dict[str, Any]:
    a = np.asarray(array)
    return {
        "dtype": dtype,
        "shape": list(a.shape),
        "data": a.astype(_NUMPY_FOR_TAG[dtype]).tobytes(),
    }


def error_value(err: MmError) -> dict[str, Any]:
    modality = None if err.item is None else err.modality
    return {
        "type": type(err).__name__,
        "message": err.message,
        "item": err.item,
        "modality": modality,
    }


def error_row(sid: str | None, err: MmError, *, count_only: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"id": sid, "error": error_value(err), "tokens": None}
    row["item_tokens"] = None
    row["modalities"] = None
    if not count_only:
        for k in ("input_ids", "offsets", "mrope_positions", "mrope_delta", "item_hashes"):
            row[k] = None
        row["items"] = None
    return row


def count_row(sid: str | None, count: TokenCount) -> dict[str, Any]:
    return {
        "id": sid,
        "error": None,
        "tokens": count.length,
        "item_tokens": count.per_item,
        "modalities": count.modalities,
    }


def output_row(sid: str | None, out: MmOutput) -> dict[str, Any]:
    items = []
    for it in out.items:
        f = it.feature
        entry: dict[str, Any] = {
            "height": it.geometry.height,
            "width": it.geometry.width,
            "grid": list(it.geometry.grid),
            "seconds_per_grid_t": it.geometry.seconds_per_grid_t,
            "feature": None,
            "compact": None,
            "aux": [{"name": k, **_tensor(t.array, t.dtype)} for k, t in sorted(it.aux.items())],
        }
        if isinstance(f, CompactTensor):
            entry["compact"] = {
                "layout": json.dumps(f.layout(), sort_keys=True, separators=(",", ":")),
                "codes": _tensor(f.codes, "uint8"),
                "luts": _tensor(f.luts, f.dtype),
                "pad": None if f.pad is None else _tensor(f.pad, f.dtype),
            }
        else:
            entry["feature"] = _tensor(f.array, f.dtype)
        items.append(entry)
    mrope = out.positions if isinstance(out.positions, MRope) else None
    return {
        "id": sid,
        "error": None,
        "tokens": len(out.input_ids),
        "item_tokens": [it.tokens for it in out.items],
        "modalities": [it.modality for it in out.items],
        "input_ids": out.input_ids.tolist(),
        "offsets": [[s, e] for s, e in out.offsets],
        "mrope_positions": None if mrope is None else mrope.positions.tolist(),
        "mrope_delta": None if mrope is None else mrope.delta,
        "item_hashes": out.hashes,
        "items": items,
    }


# -- reading back --------------------------------------------------------------------------
@dataclass(frozen=True)
class RowError:
    """A bad sample's error as stored: the `MmError` class name, message, and the item it
    names with that item's modality."""

    type: str
    message: str
    item: int | None
    modality: str | None = None


@dataclass(frozen=True, eq=False)
class DatasetRow:
    """One stored row: ``output`` for a good sample of a full run (features as stored:
    `CompactTensor` under the compact form), ``error`` for a bad one; the counts always."""

    index: int
    id: str | None
    error: RowError | None
    tokens: int | None
    item_tokens: list[int] | None
    modalities: list[str] | None
    output: MmOutput | None


def _array(t: dict[str, Any]) -> Any:
    a = np.frombuffer(t["data"], dtype=_NUMPY_FOR_TAG[t["dtype"]])
    return a.reshape(t["shape"])


def row_from_dict(row: dict[str, Any], family: str, fingerprint: str) -> DatasetRow:
    err = row.get("error")
    error = (
        None
        if err is None
        else RowError(err["type"], err["message"], err["item"], err.get("modality"))
    )
    output = None
    if error is None and row.get("items") is not None:
        items = []
        for it, tokens, h, modality in zip(
            row["items"], row["item_tokens"], row["item_hashes"], row["modalities"], strict=True
        ):
            c = it["compact"]
            if c is not None:
                pad = None if c["pad"] is None else _array(c["pad"])
                feature: Tensor | CompactTensor = CompactTensor.from_layout(
                    json.loads(c["layout"]), _array(c["codes"]), _array(c["luts"]), pad
                )
            else:
                feature = Tensor(_array(it["feature"]), it["feature"]["dtype"])
            aux = {a["name"]: Tensor(_array(a), a["dtype"]) for a in it["aux"]}
            geometry = Geometry(
                it["height"], it["width"], tuple(it["grid"]), it.get("seconds_per_grid_t")
            )
            items.append(MmItem(feature, aux, int(h), geometry, int(tokens), str(modality)))
        ids = np.asarray(row["input_ids"], dtype=np.int64)
        mp = row["mrope_positions"]
        positions: Rope1D | MRope = (
            Rope1D(len(ids))
            if mp is None
            else MRope(np.asarray(mp, dtype=np.int64).reshape(3, len(ids)), row["mrope_delta"])
        )
        output = MmOutput(
            input_ids=ids,
            items=items,
            offsets=[(int(s), int(e)) for s, e in row["offsets"]],
            positions=positions,
            family=family,
            spec_fingerprint=fingerprint,
            rid=row["id"],
        )
    return DatasetRow(
        row["index"],
        row["id"],
        error,
        row["tokens"],
        row["item_tokens"],
        row.get("modalities"),
        output,
    )
