"""Samples in, rows out: one `Pipeline` and a bounded I/O pool, what every engine runs (the
local job in its process, each Ray actor in its own).

Fetch runs ahead on the I/O pool, apart from the pipeline's CPU pool: the driver takes bytes,
so a slow URL holds an I/O thread, never a core. The fetch is the driver's own (the request
checks, then `fetch_all` under the spec's policy and budgets), so a bad source gets the error
`Pipeline.process` would give, and so does every later step, run by the pipeline on the
fetched bytes; an error attributed to a fetched item names its original source kind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .._carriers import MmInput, MmOutput
from .._driver import Pipeline, pipeline_from_spec
from .._spec import load_spec
from ..errors import DatasetError, MmError
from . import _rows
from ._manifest import Sample

DEFAULT_IO_THREADS = 8

#: A sample's fetched sources: ``(data, source kind, None)`` per image, then ``(data, source
#: kind, the video's options)`` per video.
Fetched = list[tuple[Any, str, Any]]


def resolve_spec(spec: Any, threads: int | None = None) -> dict[str, Any]:
    """The spec as a plain resolved document (picklable, for actors), ``threads`` set when
    given."""
    doc: dict[str, Any] = load_spec(spec).spec.model_dump(mode="json")
    if threads is not None:
        doc["threads"] = threads
    return doc


def _reattribute(err: MmError, kinds: Mapping[str, Sequence[str]]) -> MmError:
    """An error the pipeline attributed to a fetched item ("image 1 (bytes): ...") as
    `Pipeline.process` on the original sources words it ("image 1 (file): ..."); ``kinds``:
    the source kinds of each modality's items."""
    k = err.item
    of = kinds.get(err.modality, ())
    if k is None or err.source_kind != "bytes" or not (0 <= k < len(of)):
        return err
    kind = of[k]
    if kind == "bytes":
        return err
    old, new = f"{err.modality} {k} (bytes): ", f"{err.modality} {k} ({kind}): "
    message = err.message.replace(old, new, 1) if err.message.startswith(old) else err.message
    out = type(err).__new__(type(err), message)
    out.__dict__.update(err.__dict__)
    Exception.__init__(out, message)
    out.message, out.source_kind = message, kind
    return out


class Processor:
    """One pipeline (``threads`` for its CPU pool) and an I/O pool of ``io_threads`` for
    fetch. ``count_only``: header-only token counts; else the full output, ``compact`` or
    not (None: compact when the family offers it)."""

    def __init__(
        self,
        spec: Any,
        *,
        count_only: bool = False,
        compact: bool | None = None,
        threads: int | None = None,
        io_threads: int = DEFAULT_IO_THREADS,
    ) -> None:
        doc = resolve_spec(spec, threads)
        self.pipe: Pipeline = pipeline_from_spec(doc)
        self.count_only = count_only
        offers = self.pipe.family.offers_compact
        if compact and not offers and not count_only:
            self.pipe.close()
            raise DatasetError(
                f"family {self.pipe.family.name!r} does not offer the compact form: "
                "ask for full features (--features full)"
            )
        self.compact = offers if compact is None else compact
        self._io = ThreadPoolExecutor(max(1, io_threads), thread_name_prefix="sglang-mm-io")

    @property
    def family(self) -> str:
        return self.pipe.family.name

    @property
    def fingerprint(self) -> str:
        return self.pipe.spec_fingerprint

    def close(self) -> None:
        self._io.shutdown(wait=True, cancel_futures=True)
        self.pipe.close()

    # -- the two steps ---------------------------------------------------------------------
    def _fetch(self, sample: Sample) -> Fetched | MmError:
        if sample.error is not None:
            return sample.error
        req = MmInput(sample.input_ids, sample.images, sample.id, sample.videos)
        pipe = self.pipe
        try:
            ids = pipe._check(req)
            if self.count_only:
                pipe._check_prompt(ids, len(req.images), len(req.videos))
            return [(src.data, src.kind, src.video) for src in pipe._fetch(req)]
        except MmError as e:
            return e

    def prefetch(self, samples: Sequence[Sample]) -> list[Future[Fetched | MmError] | Any]:
        """Start fetching every sample on the I/O pool; a sample whose sources are all in
        memory already (or that is malformed) is handed to the pipeline as it is."""
        out: list[Any] = []
        for s in samples:
            if s.error is not None:
                out.append(s.error)
            elif not s.videos and all(
                isinstance(i, (bytes, bytearray, memoryview)) for i in s.images
            ):
                out.append([(i, "bytes", None) for i in s.images])
            else:
                out.append(self._io.submit(self._fetch, s))
        return out

    def finish(self, samples: Sequence[Sample], fetched: Sequence[Any]) -> list[dict[str, Any]]:
        """The rows of ``samples`` (their `prefetch` results), in order."""
        got: list[Fetched | MmError] = [f.result() if isinstance(f, Future) else f for f in fetched]
        rows: list[dict[str, Any] | None] = [None] * len(samples)
        todo: list[tuple[int, MmInput, dict[str, list[str]]]] = []
        for i, (s, f) in enumerate(zip(samples, got, strict=True)):
            if isinstance(f, MmError):
                rows[i] = _rows.error_row(s.id, f, count_only=self.count_only)
            else:
                images = [d for d, _, o in f if o is None]
                videos = [{"video": d, **o.set()} for d, _, o in f if o is not None]
                kinds = {
                    "image": [k for _, k, o in f if o is None],
                    "video": [k for _, k, o in f if o is not None],
                }
                todo.append((i, MmInput(s.input_ids, images, s.id, videos), kinds))
        if self.count_only:
            for i, req, kinds in todo:
                try:
                    rows[i] = _rows.count_row(req.rid, self.pipe.count_tokens(req))
                except MmError as e:
                    rows[i] = _rows.error_row(req.rid, _reattribute(e, kinds), count_only=True)
        elif todo:
            outs = self.pipe.process_batch(
                [r for _, r, _ in todo], return_exceptions=True, compact=self.compact
            )
            for (i, req, kinds), out in zip(todo, outs, strict=True):
                if isinstance(out, MmOutput):
                    rows[i] = _rows.output_row(req.rid, out)
                else:
                    rows[i] = _rows.error_row(req.rid, _reattribute(out, kinds), count_only=False)
        assert all(r is not None for r in rows)
        return rows  # type: ignore[return-value]

    def rows(self, samples: Sequence[Sample]) -> list[dict[str, Any]]:
        return self.finish(samples, self.prefetch(samples))


def meta(proc: Processor) -> Mapping[str, Any]:
    """What a shard's schema metadata records about the job."""
    return {
        "format_version": _rows.ROW_FORMAT_VERSION,
        "family": proc.family,
        "spec_fingerprint": proc.fingerprint,
        "count_only": proc.count_only,
        "compact": proc.compact and not proc.count_only,
    }
