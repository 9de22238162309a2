"""The dataset job: plan shards by row index, skip the finished ones, stream rows from an
engine into the one writer, and report (a tqdm bar with samples/s, then a `Summary`)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import DatasetError
from . import _deps, _rows
from ._manifest import Manifest
from ._process import DEFAULT_IO_THREADS, Processor, meta, resolve_spec
from ._writer import JobState, ShardStats, ShardWriter, shard_name

Engine = Literal["local", "ray"]
DEFAULT_SHARD_ROWS = 1000
DEFAULT_ROW_GROUP_ROWS = 16  # rows with features: a row group of a few tens of MB at most
DEFAULT_COUNT_ROW_GROUP_ROWS = 4096  # token counts only: a few bytes per row
DEFAULT_ROWS_IN_FLIGHT = 32


@dataclass(frozen=True)
class Options:
    """How a job runs. ``shard_rows`` and ``row_group_rows`` fix the files' layout (recorded,
    so a rerun must keep them); the rest changes only speed and memory: at most
    ``rows_in_flight`` rows are fetched or processed ahead of the writer (plus one row group
    buffered), whatever the manifest's size."""

    count_only: bool = False
    features: Literal["compact", "full"] | None = None  # None: compact when offered
    engine: Engine = "local"
    address: str | None = None
    threads: int | None = None  # local: the pipeline's pool; ray: total CPUs asked
    io_threads: int = DEFAULT_IO_THREADS
    shard_rows: int = DEFAULT_SHARD_ROWS
    row_group_rows: int | None = None  # None: 16, or 4096 under count_only
    rows_in_flight: int = DEFAULT_ROWS_IN_FLIGHT
    progress: bool | None = None  # None: a bar when stderr is a terminal

    def check(self) -> None:
        for name in ("shard_rows", "group_rows", "rows_in_flight", "io_threads"):
            if getattr(self, name) < 1:
                raise DatasetError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.threads is not None and self.threads < 0:
            raise DatasetError(f"threads must be >= 0, got {self.threads}")
        if self.engine not in ("local", "ray"):
            raise DatasetError(f"unknown engine {self.engine!r} (local or ray)")
        if self.address is not None and self.engine != "ray":
            raise DatasetError("--address is for --engine ray")

    @property
    def group_rows(self) -> int:
        """Rows per Parquet row group (``row_group_rows``, else the mode's default)."""
        if self.row_group_rows is not None:
            return self.row_group_rows
        return DEFAULT_COUNT_ROW_GROUP_ROWS if self.count_only else DEFAULT_ROW_GROUP_ROWS

    @property
    def compact(self) -> bool | None:
        return None if self.features is None else self.features == "compact"


@dataclass
class Summary:
    """The end of a job: totals over every shard of the folder (this run's and earlier
    ones'), and what this run wrote."""

    out: Path
    shards: int
    shards_skipped: int
    rows: int
    images: int
    tokens: int
    bytes: int
    bytes_written: int
    errors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    rows_this_run: int = 0
    videos: int = 0

    def lines(self) -> list[str]:
        errs = ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())) or "none"
        rate = (self.rows_this_run / self.seconds) if self.seconds > 0 else 0.0
        return [
            f"rows      {self.rows} ({sum(self.errors.values())} with errors: {errs})",
            f"images    {self.images}; videos {self.videos}; tokens {self.tokens}",
            f"shards    {self.shards} in {self.out} ({self.shards_skipped} already done)",
            f"bytes     {self.bytes} ({self.bytes_written} written by this run)",
            f"time      {self.seconds:.1f} s ({rate:.1f} samples/s)",
        ]


def _plan(n_rows: int, shard_rows: int) -> list[tuple[int, int, int]]:
    return [
        (k, start, min(start + shard_rows, n_rows))
        for k, start in enumerate(range(0, n_rows, shard_rows))
    ]


def run(
    manifest: str | Path, spec: Any, out: str | Path, options: Options | None = None
) -> Summary:
    """Run one job: ``manifest`` (JSONL or Parquet) through ``spec`` into the folder ``out``.
    A rerun into the same folder skips the finished shards and writes the same bytes."""
    import time

    opts = options or Options()
    opts.check()
    pa = _deps.pyarrow()
    man = Manifest(manifest)
    doc = resolve_spec(spec)
    engine = _engine(opts, doc, man)
    try:
        info = engine.meta
        job = {
            "manifest": str(man.path),
            "manifest_rows": man.num_rows,
            "shard_rows": opts.shard_rows,
            "row_group_rows": opts.group_rows,
            **info,
        }
        state = JobState(Path(out).absolute(), job)
        sch = _rows.schema(pa, count_only=opts.count_only).with_metadata(
            {"sglang_mm": json.dumps(dict(info), sort_keys=True)}
        )
        plan = _plan(man.num_rows, opts.shard_rows)
        todo = [p for p in plan if p[0] not in state.done]
        t0 = time.perf_counter()
        written = 0
        n_run = 0
        bar = _bar(sum(b - a for _, a, b in todo), opts.progress)
        try:
            rows = engine.rows([(a, b) for _, a, b in todo])
            for k, start, stop in todo:
                writer = ShardWriter(state.out / shard_name(k), sch, opts.group_rows)
                try:
                    for index in range(start, stop):
                        row = next(rows)
                        row["index"] = index
                        writer.add(row)
                        n_run += 1
                        if bar is not None:
                            bar.update(1)
                    stats = writer.close()
                except BaseException:
                    writer.abort()
                    raise
                written += stats.bytes
                state.mark_done(k, stats)
            # run the engine to its end (Ray's iterator then finishes while Ray is up)
            if next(rows, None) is not None:
                raise DatasetError("the engine gave more rows than the manifest holds")
        finally:
            if bar is not None:
                bar.close()
        total = ShardStats()
        errors: Counter[str] = Counter()
        for s in state.done.values():
            total.rows += s.rows
            total.images += s.images
            total.videos += s.videos
            total.tokens += s.tokens
            total.bytes += s.bytes
            errors.update(s.errors)
        return Summary(
            out=state.out,
            shards=len(plan),
            shards_skipped=len(plan) - len(todo),
            rows=total.rows,
            images=total.images,
            tokens=total.tokens,
            bytes=total.bytes,
            bytes_written=written,
            errors=dict(errors),
            seconds=time.perf_counter() - t0,
            rows_this_run=n_run,
            videos=total.videos,
        )
    finally:
        engine.close()


def _bar(total: int, progress: bool | None) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit="sample",
        file=sys.stderr,
        disable=None if progress is None else not progress,
        smoothing=0.1,
    )


class _Engine:
    meta: dict[str, Any]

    def rows(self, ranges: list[tuple[int, int]]) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class LocalEngine(_Engine):
    """The pipeline's own pool for the CPU work, a bounded I/O pool for fetch; windows of
    ``rows_in_flight`` rows, the next one fetched while the current one is processed."""

    def __init__(self, opts: Options, doc: dict[str, Any], man: Manifest) -> None:
        self.man = man
        self.window = opts.rows_in_flight
        self.proc = Processor(
            doc,
            count_only=opts.count_only,
            compact=opts.compact,
            threads=opts.threads,
            io_threads=opts.io_threads,
        )
        self.meta = dict(meta(self.proc))

    def rows(self, ranges: list[tuple[int, int]]) -> Iterator[dict[str, Any]]:
        proc = self.proc
        for start, stop in ranges:
            samples = self.man.samples(start, stop)
            pending: tuple[list[Any], list[Any]] | None = None
            while True:
                chunk = [s for _, s in zip(range(self.window), samples, strict=False)]
                ahead = (chunk, proc.prefetch(chunk)) if chunk else None
                if pending is not None:
                    yield from proc.finish(*pending)
                if ahead is None:
                    break
                pending = ahead

    def close(self) -> None:
        self.proc.close()


def _engine(opts: Options, doc: dict[str, Any], man: Manifest) -> _Engine:
    if opts.engine == "ray":
        from ._ray import RayEngine

        return RayEngine(opts, doc, man)
    return LocalEngine(opts, doc, man)
