"""The Ray engine and `RayPreprocessor`, the callable class for ``Dataset.map_batches``.

Ray Data reads the manifest (``read_parquet``, or ``read_text`` for JSONL so that each line
is parsed, and a bad one reported, by the same code as the local engine), then
``map_batches(RayPreprocessor, ...)`` runs one `Processor` per actor, its pool sized to the
actor's CPUs. The driver iterates the batches in order and feeds the local engine's writer,
so the shards are the local engine's bytes. A rerun skips the finished shards' rows before
the actors see them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .._threads import available_cores
from ..errors import DatasetError
from . import _deps, _rows
from ._job import Options, _Engine
from ._manifest import Manifest, Sample, parse_line, sample_from_row, table_rows
from ._process import DEFAULT_IO_THREADS, Processor, meta


def _actor_cpus() -> int | None:
    """The CPUs Ray assigned to this worker (None outside a Ray worker)."""
    try:
        import ray

        if not ray.is_initialized():
            return None
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")  # type: ignore[no-untyped-call]
    except Exception:  # outside a worker, or an older runtime context
        return None
    return None if not cpus else max(1, int(cpus))


class RayPreprocessor:
    """A callable class for ``ds.map_batches``: manifest rows in (``id``, ``input_ids``,
    ``images`` or ``image``; or JSONL lines in a ``text`` column), output rows out as a
    ``pyarrow.Table`` in the shard layout (without ``index``). One pipeline per actor, its
    pool sized to the actor's CPUs (``threads`` overrides). Relative image paths are read
    against ``base_dir`` (default: the working directory)::

        ds.map_batches(RayPreprocessor, fn_constructor_kwargs={"spec": spec},
                       concurrency=4, num_cpus=2, batch_size=16)
    """

    def __init__(
        self,
        spec: Any,
        *,
        base_dir: str | None = None,
        count_only: bool = False,
        features: str | None = None,
        threads: int | None = None,
        io_threads: int = DEFAULT_IO_THREADS,
    ) -> None:
        compact = None if features is None else features == "compact"
        cpus = threads if threads is not None else _actor_cpus()
        self.proc = Processor(
            spec, count_only=count_only, compact=compact, threads=cpus, io_threads=io_threads
        )
        self.base = Path(base_dir or ".").absolute()
        self._pa = _deps.pyarrow()
        self._schema = _rows.schema(self._pa, count_only=count_only).remove(0)

    def _samples(self, batch: Any) -> list[Sample]:
        pa = self._pa
        if isinstance(batch, pa.Table):
            cols = batch.column_names
            rows: Any = table_rows(batch)
        elif isinstance(batch, Mapping):
            cols = list(batch)
            n = len(next(iter(batch.values()))) if batch else 0
            rows = [{c: _plain(batch[c][i]) for c in cols} for i in range(n)]
        else:  # a pandas DataFrame
            cols = list(batch.columns)
            rows = [{c: _plain(v) for c, v in r.items()} for r in batch.to_dict("records")]
        if "text" in cols and "input_ids" not in cols:
            return [parse_line(r["text"], self.base) for r in rows]
        return [sample_from_row(r, self.base) for r in rows]

    def __call__(self, batch: Any) -> Any:
        rows = self.proc.rows(self._samples(batch))
        return self._pa.Table.from_pylist(rows, schema=self._schema)

    def __del__(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None:
            proc.close()


def _plain(value: Any) -> Any:
    """numpy values of a ``"numpy"`` batch as plain Python (lists, bytes, str)."""
    tolist = getattr(value, "tolist", None)
    if tolist is not None and not isinstance(value, (bytes, str)):
        value = tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def plan_actors(cluster_cpus: float, want: int | None) -> tuple[int, float, int]:
    """Actors, CPUs asked per actor, pipeline threads per actor. Ray Data's listing and read
    tasks ask for one CPU each, so one CPU of the cluster is left to them (actors holding
    every CPU would wait forever for a read); the actors get the rest (or ``want``), two
    CPUs each. A cluster of one CPU or less gets one actor asking for half of it."""
    if cluster_cpus < 2:
        return 1, cluster_cpus / 2, 1
    cpus = int(cluster_cpus - 1)
    if want:
        cpus = max(1, min(want, cpus))
    per_actor = min(cpus, 2)
    return cpus // per_actor, float(per_actor), per_actor


class RayEngine(_Engine):
    """Ray Data over a local cluster (``ray.init()``) or an existing one (``address``)."""

    def __init__(self, opts: Options, doc: dict[str, Any], man: Manifest) -> None:
        self.ray = _deps.ray()
        self.rd = _deps.ray_data()
        self.opts, self.doc, self.man = opts, doc, man
        self._owns = False
        if not self.ray.is_initialized():
            kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if opts.address is None:
                # one logical CPU more than the actors use, for Ray Data's read tasks
                kw["num_cpus"] = (opts.threads or available_cores()) + 1
            try:
                self.ray.init(address=opts.address, **kw)
            except Exception as e:  # ConnectionError, a bad address, a cluster that is down
                where = f" at {opts.address!r}" if opts.address else ""
                raise DatasetError(
                    f"cannot start or join a Ray cluster{where}: {type(e).__name__}: {e}"
                ) from None
            self._owns = True
        # the job's description, from the same pipeline the actors build (no pool started)
        probe = Processor(doc, count_only=opts.count_only, compact=opts.compact, threads=0)
        self.meta = dict(meta(probe))
        self.compact = probe.compact
        probe.close()

    def _read(self) -> Any:
        # The read asks for no CPU: the actors hold every CPU they were given, and a read
        # task waiting for one of them would never run.
        path = str(self.man.path)
        if self.man.format == "jsonl":
            return self.rd.read_text(path, drop_empty_lines=True, num_cpus=0)
        return self.rd.read_parquet(path, num_cpus=0).select_columns(self.man.columns)

    def rows(self, ranges: list[tuple[int, int]]) -> Iterator[dict[str, Any]]:
        if not ranges:
            return
        ctx = self.rd.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        actors, per_actor, threads = plan_actors(
            float(self.ray.cluster_resources().get("CPU", 1)), self.opts.threads
        )
        first = ranges[0][0]
        ds = self._read()
        if first > 0:  # the finished shards' rows are dropped before any work
            ds = ds.split_at_indices([first])[1]
        ds = ds.map_batches(
            RayPreprocessor,
            fn_constructor_kwargs={
                "spec": self.doc,
                "base_dir": str(self.man.base),
                "count_only": self.opts.count_only,
                "features": "compact" if self.compact else "full",
                "threads": threads,
                "io_threads": self.opts.io_threads,
            },
            batch_format="pyarrow",
            batch_size=max(1, self.opts.rows_in_flight // actors),
            compute=self.rd.ActorPoolStrategy(size=actors),
            num_cpus=per_actor,
        )
        wanted = iter(ranges)
        lo, hi = next(wanted)
        index = first
        for batch in ds.iter_batches(batch_format="pyarrow", batch_size=None, prefetch_batches=1):
            for row in batch.to_pylist():
                while index >= hi:
                    nxt = next(wanted, None)
                    if nxt is None:
                        return
                    lo, hi = nxt
                if index >= lo:
                    yield row
                index += 1

    def close(self) -> None:
        if self._owns:
            self.ray.shutdown()
