"""Shards on disk: the one writer of both engines, and the job's state in the output folder.

A shard holds the rows ``[k * shard_rows, (k + 1) * shard_rows)`` of the manifest, whatever
the engine or its parallelism, in row groups of ``row_group_rows``: the same rows give the
same bytes. It is written to a temporary file, flushed to disk and renamed into place, then
recorded in ``_done.json`` (rewritten the same way); a job killed at any point leaves only
finished shards under their final names, and a rerun redoes the rest. ``_job.json`` records
what the folder holds (manifest, spec fingerprint, mode, shard size), so a rerun of another
job into it is refused instead of mixing two outputs."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from . import _deps

JOB_FILE = "_job.json"
DONE_FILE = "_done.json"


def shard_name(k: int) -> str:
    return f"part-{k:05d}.parquet"


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


@dataclass
class ShardStats:
    """What one shard holds: rows, errors by class, the good rows' tokens, images and videos,
    file bytes."""

    rows: int = 0
    images: int = 0
    tokens: int = 0
    videos: int = 0
    bytes: int = 0
    errors: Counter[str] = field(default_factory=Counter)

    def add(self, row: dict[str, Any]) -> None:
        self.rows += 1
        err = row.get("error")
        if err is not None:
            self.errors[err["type"]] += 1
        else:
            self.tokens += int(row["tokens"])
            self.images += row["modalities"].count("image")
            self.videos += row["modalities"].count("video")

    def as_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "images": self.images,
            "videos": self.videos,
            "tokens": self.tokens,
            "bytes": self.bytes,
            "errors": dict(sorted(self.errors.items())),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ShardStats:
        return cls(
            rows=int(doc["rows"]),
            images=int(doc["images"]),
            tokens=int(doc["tokens"]),
            videos=int(doc["videos"]),
            bytes=int(doc["bytes"]),
            errors=Counter({str(k): int(v) for k, v in doc["errors"].items()}),
        )


class ShardWriter:
    """Rows in (``index`` included), one Parquet shard out, atomically on `close`."""

    def __init__(self, path: Path, schema: Any, row_group_rows: int) -> None:
        self.path = path
        self.tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self.schema = schema
        self.row_group_rows = row_group_rows
        self.stats = ShardStats()
        self._buf: list[dict[str, Any]] = []
        self._writer: Any = None

    def add(self, row: dict[str, Any]) -> None:
        self.stats.add(row)
        self._buf.append(row)
        if len(self._buf) >= self.row_group_rows:
            self._flush()

    def _flush(self) -> None:
        pa, pq = _deps.pyarrow(), _deps.parquet()
        if self._writer is None:
            self._writer = pq.ParquetWriter(
                self.tmp, self.schema, compression="zstd", write_statistics=False
            )
        if self._buf:
            table = pa.Table.from_pylist(self._buf, schema=self.schema)
            self._writer.write_table(table, row_group_size=len(self._buf))
            self._buf = []

    def close(self) -> ShardStats:
        self._flush()
        self._writer.close()
        with self.tmp.open("rb+") as f:
            os.fsync(f.fileno())
        os.replace(self.tmp, self.path)
        _fsync_dir(self.path.parent)
        self.stats.bytes = self.path.stat().st_size
        return self.stats

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self.tmp.unlink(missing_ok=True)


class JobState:
    """The output folder: its job description and the shards done so far."""

    def __init__(self, out: Path, job: dict[str, Any]) -> None:
        self.out = out
        self.job = job
        if out.exists() and not out.is_dir():
            raise DatasetError(f"output {str(out)!r} is not a folder")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DatasetError(f"cannot create output folder {str(out)!r}: {e}") from None
        if not os.access(out, os.W_OK | os.X_OK):
            raise DatasetError(f"output folder {str(out)!r} is not writable")
        job_file = out / JOB_FILE
        if job_file.exists():
            old = self._read(job_file)
            if old != job:
                diff = sorted(k for k in set(old) | set(job) if old.get(k) != job.get(k))
                raise DatasetError(
                    f"output folder {str(out)!r} holds another job (differs in: "
                    f"{', '.join(diff)}): use a new folder, or empty this one"
                )
        else:
            if any(out.glob("part-*.parquet")):
                raise DatasetError(
                    f"output folder {str(out)!r} holds shards but no {JOB_FILE}: use a new "
                    "folder, or empty this one"
                )
            write_atomic(job_file, _dumps(job))
        for tmp in out.glob(".*.tmp"):  # left by a killed run
            tmp.unlink(missing_ok=True)
        self.done: dict[int, ShardStats] = {}
        done_file = out / DONE_FILE
        if done_file.exists():
            doc = self._read(done_file)
            for k, stats in doc.get("shards", {}).items():
                if (out / shard_name(int(k))).is_file():
                    self.done[int(k)] = ShardStats.from_json(stats)

    @staticmethod
    def _read(path: Path) -> dict[str, Any]:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise DatasetError(f"cannot read {str(path)!r}: {e}") from None
        if not isinstance(doc, dict):
            raise DatasetError(f"{str(path)!r} is not a JSON object")
        return doc

    def mark_done(self, k: int, stats: ShardStats) -> None:
        self.done[k] = stats
        shards = {f"{i:05d}": s.as_json() for i, s in sorted(self.done.items())}
        write_atomic(self.out / DONE_FILE, _dumps({"shards": shards}))


def _dumps(doc: Any) -> bytes:
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
