"""Dataset preprocessing at scale: a manifest of samples (JSONL or Parquet) to a folder of
Parquet shards, on this machine or on a Ray cluster (docs/dataset.md).

Needs the ``dataset`` extra (pyarrow, tqdm), and ``ray`` for the Ray engine and
`RayPreprocessor`; this package imports without them, and a job that needs one names it (a
`MissingExtraError`; its errors are in `sglang_mm_core.errors`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._job import Options, Summary, run
from ._manifest import Manifest, Sample
from ._rows import DatasetRow, RowError

if TYPE_CHECKING:
    from ._ray import RayPreprocessor


def read_shards(folder: str | Path) -> list[DatasetRow]:
    """Every row of a job's output folder, in manifest order (features as stored)."""
    import json

    from . import _deps
    from ._rows import row_from_dict

    pq = _deps.parquet()
    out: list[DatasetRow] = []
    for path in sorted(Path(folder).glob("part-*.parquet")):
        table = pq.read_table(path)
        info = json.loads(table.schema.metadata[b"sglang_mm"])
        for row in table.to_pylist():
            out.append(row_from_dict(row, info["family"], info["spec_fingerprint"]))
    return out


def __getattr__(name: str) -> Any:
    # RayPreprocessor's module imports nothing of Ray itself, but keep the import lazy anyway
    if name == "RayPreprocessor":
        from ._ray import RayPreprocessor

        return RayPreprocessor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DatasetRow",
    "Manifest",
    "Options",
    "RayPreprocessor",
    "RowError",
    "Sample",
    "Summary",
    "read_shards",
    "run",
]
