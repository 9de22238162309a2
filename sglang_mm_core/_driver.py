"""The request driver and its `par` seam (docs/architecture.md: the request path, threads).

The driver owns the flow: checks, fetch (inline, sequential, budgeted), then per item
hash -> decode -> ``family.process_item`` through the one `Par` seam, then layout, expansion and
positions. A family only describes its data. Every failure ends the request with one typed
error naming the item; the reported error is the one of the lowest item index whatever the
thread timing, because results are consumed in item order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from . import _native
from ._cache import CacheStats, FeatureCache, Form
from ._carriers import MmInput, MmItem, MmOutput, ProcessedItem, TokenCount
from ._family import Family
from ._layout import TokenLayout, apply_layout, check_placeholders, layout_by_placeholder_kinds
from ._plan import Placeholder, Plan
from ._positions import MRope, Rope1D
from ._source_mode import check_source_mode
from ._spec import ResolvedSpec, Spec, load_spec
from ._threads import resolve_threads
from ._video import check_decoded_bytes
from ._video_items import (
    VideoOptions,
    check_feature_bytes,
    checked_video_plan,
    header_of,
    options_key,
    process_video,
    sources_and_options,
    video_limits,
)
from .errors import (
    LimitError,
    MmError,
    MmRequestError,
    PluginError,
    UnsupportedModalityError,
)

if TYPE_CHECKING:
    from ._fetch.cancel import CancelScope
    from ._registry import Registry

T = TypeVar("T")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class _Handle(Protocol[R_co]):
    def result(self) -> R_co: ...
    def cancel(self) -> bool: ...


class _Inline(Generic[T, R]):
    """A task run on the calling thread when its result is asked for, so that work after a
    failed item of the same request is skipped rather than done."""

    def __init__(self, fn: Callable[[T], R], arg: T) -> None:
        self._fn = fn
        self._arg = arg

    def result(self) -> R:
        return self._fn(self._arg)

    def cancel(self) -> bool:
        return True


class Par:
    """The one fan-out seam: how many threads, and the pool that runs them. Order-preserving
    maps only (never reductions), so every pool size gives bit-identical output.

    ``request_threads`` is what one call of `Pipeline.process_batch` may spend on kernel row
    bands (default: the whole pool). A server whose workers share one pipeline sets it to
    each worker's share, so that concurrent requests do not each claim every core, while
    their items still spread over the whole pool."""

    def __init__(self, threads: int, request_threads: int | None = None) -> None:
        if threads < 0:
            raise ValueError(f"threads must be >= 0, got {threads}")
        if request_threads is not None and request_threads < 1:
            raise ValueError(f"request_threads must be >= 1, got {request_threads}")
        self.threads = threads
        self.request_threads = threads if request_threads is None else request_threads
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def kernel_threads(self, n_items: int) -> int:
        """The row-parallel budget of one ``process_item`` call: spare threads go to the items
        when a request has fewer items than the pool, so one big image still uses the cores."""
        budget = min(self.threads, self.request_threads)
        if budget <= 1 or n_items >= budget:
            return 1
        return max(1, budget // max(1, n_items))

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("pipeline is closed")
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="sglang-mm")
            return self._pool

    def submit(self, fn: Callable[[T], R], args: Sequence[T]) -> list[_Handle[R]]:
        """Start ``fn`` on every arg; the handles are read in order. Inline when the pool size
        is 0, or when there is a single task (no hand-off needed)."""
        if self.threads == 0 or len(args) <= 1:
            return [_Inline(fn, a) for a in args]
        pool = self._executor()
        futures: list[Future[R]] = [pool.submit(fn, a) for a in args]
        return list(futures)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


_CURRENT_SCOPE: Callable[[], CancelScope | None] | None = None


def _current_scope() -> CancelScope | None:
    """The calling context's cancel scope (the fetch package loads with the first fetch, and
    is imported here once, not on every request)."""
    global _CURRENT_SCOPE
    if _CURRENT_SCOPE is None:
        from ._fetch.cancel import current_scope

        _CURRENT_SCOPE = current_scope
    return _CURRENT_SCOPE()


class _Job(NamedTuple):
    # A tuple, not a dataclass: one is built per item on the hot path.
    request: int
    item: int  # the index in its modality's list
    data: bytes | bytearray | memoryview
    kind: str
    threads: int
    compact: bool = False
    # The server's cancellation of the request (deadline passed, client gone): items not yet
    # started are skipped. Pool threads do not see the caller's context, so it rides here.
    scope: CancelScope | None = None
    video: VideoOptions | None = None  # set for a video


class _Done(NamedTuple):
    hash: int
    processed: ProcessedItem
    modality: str = "image"


class _Src(NamedTuple):
    """A fetched source: its bytes, its form, and its options when it is a video."""

    data: bytes | bytearray | memoryview
    kind: str
    item: int
    video: VideoOptions | None = None


def _as_ids(input_ids: Any) -> npt.NDArray[np.int64]:
    # numpy turns ``[True, 5]`` into integers; a bool is not a token id.
    if not isinstance(input_ids, np.ndarray) and isinstance(input_ids, Sequence):
        kinds = set(map(type, input_ids))
        if bool in kinds or np.bool_ in kinds:
            raise MmRequestError("input_ids must be integers, not booleans")
    ids = np.asarray(input_ids)
    if ids.size == 0:
        raise MmRequestError("input_ids is empty: a request needs at least one prompt token")
    if ids.ndim != 1 or ids.dtype.kind not in "iu":  # numpy's integer kinds (not bool)
        raise MmRequestError(
            f"input_ids must be a flat sequence of integers, got {ids.dtype} of shape {ids.shape}"
        )
    return np.ascontiguousarray(ids, dtype=np.int64)


def _attribute(err: MmError, item: int, kind: str, modality: str = "image") -> MmError:
    """``err`` attributed to request item ``item``, keeping its traceback and cause."""
    out = err.at_item(item, kind, modality).with_traceback(err.__traceback__)
    out.__cause__ = err.__cause__
    return out


def _plugin_error(family: Family[Any], what: str, err: BaseException) -> PluginError:
    out = PluginError(f"family {family.name!r} failed in {what}: {type(err).__name__}: {err}")
    out.__cause__ = err
    return out


def pipeline_from_spec(
    spec: str | bytes | Mapping[str, Any] | Path | Spec, *, registry: Registry | None = None
) -> Pipeline:
    """Validate a spec (JSON text, a path, bytes or a mapping) and build its `Pipeline`.

    A string is JSON text when it starts with ``{``, else the path of a JSON file. The family
    comes from the installed plugins, or from ``registry`` when given."""
    return Pipeline(load_spec(spec, registry=registry))


class Pipeline:
    """A validated spec bound to its family and a thread pool; built by `pipeline_from_spec`.
    Safe to share between threads. Close it (or use it as a context manager) to stop the pool.
    ``request_threads``: see `Par` (the server passes each worker's share)."""

    def __init__(self, spec: ResolvedSpec, *, request_threads: int | None = None) -> None:
        self.spec = spec
        self.spec_fingerprint = spec.fingerprint
        self.par = Par(resolve_threads(spec.spec.threads), request_threads)
        self.cache: FeatureCache | None = None
        try:
            self.family: Family[Any] = spec.family(spec.params)
        except MmError:
            raise
        except Exception as e:
            raise PluginError(
                f"family {spec.family.name!r} could not be built from its params: "
                f"{type(e).__name__}: {e}"
            ) from e
        # Per-spec decisions, taken once here rather than on every request (the hot path
        # reads plain attributes, no pydantic model walks).
        s = spec.spec
        self._decode_kw: dict[str, Any] = {
            "alpha": s.decode.alpha or "white",
            "exif_orientation": bool(s.decode.exif_orientation),
            "max_pixels": s.limits.max_image_pixels,
            "max_side": s.limits.max_image_side,
        }
        self._max_items = s.limits.max_items
        modes = s.decode.source_modes
        self._source_modes = None if modes is None else frozenset(modes)
        self._source_modes_reason = spec.source_modes_reason
        fam = self.family
        try:
            self._placeholder: Placeholder = fam._compiled().placeholder
            self._offers_compact = bool(fam.offers_compact)
            # The core composes the feature: an image whose rows stream is decoded into it.
            self._composed = fam._compiled().recipe is not None
        except MmError:
            raise
        except Exception as e:
            raise _plugin_error(fam, "features() or placeholder()", e) from e
        cache = spec.spec.cache
        if cache is not None:  # one entry per form asked for (_cache.py)
            forms: tuple[Form, ...] = ("full", "compact") if self._offers_compact else ("full",)
            self.cache = FeatureCache(cache.max_bytes, forms)
        self._needs_images = bool(fam.requires_images)
        self._takes_images = "image" in fam.modalities
        self._takes_videos = "video" in fam.modalities
        self._video_placeholder: Placeholder | None = None
        # Why this instance takes no videos though its family does (its params lack something
        # a video needs): the family's own words, raised for every request with videos.
        self._video_refusal: UnsupportedModalityError | None = None
        if self._takes_videos:
            try:
                vph = fam.video_placeholder()
            except UnsupportedModalityError as e:
                self._takes_videos, self._video_refusal = False, e
            except MmError:
                raise
            except Exception as e:
                raise _plugin_error(fam, "video_placeholder()", e) from e
            else:
                if not isinstance(vph, Placeholder) or vph.token == self._placeholder.token:
                    raise PluginError(
                        f"family {fam.name!r}: video_placeholder() must be a Placeholder whose "
                        "token differs from the image placeholder's"
                    )
                self._video_placeholder = vph

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def threads(self) -> int:
        return self.par.threads

    def close(self) -> None:
        self.par.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        par = getattr(self, "par", None)
        pool = getattr(par, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return (
            f"Pipeline(family={self.family.name!r}, threads={self.threads}, "
            f"spec_fingerprint={self.spec_fingerprint[:12]!r}...)"
        )

    # -- public API ------------------------------------------------------------------------
    def process(self, request: MmInput, *, compact: bool = False) -> MmOutput:
        """One request in, one model-ready output out, or one `MmError` (nothing partial).
        ``compact=True``: each item's feature is a `CompactTensor` (see `process_batch`).

        The same steps as a batch of one, without the batch's bookkeeping (this path is the
        per-request GIL time of a server or an engine's scheduler)."""
        if compact and not self._offers_compact:
            raise self._no_compact()
        ids = self._check(request)
        got = self._fetch(request)
        kthreads = self.par.kernel_threads(len(got))
        scope = _current_scope() if got else None
        jobs = [_Job(0, s.item, s.data, s.kind, kthreads, compact, scope, s.video) for s in got]
        handles = self.par.submit(self._run_item, jobs)  # a single item runs inline
        done: list[_Done] = []
        for i, handle in enumerate(handles):
            res = handle.result()
            if isinstance(res, MmError):
                for rest in handles[i + 1 :]:
                    rest.cancel()
                raise res
            done.append(res)
        return self._finish(request, ids, done)

    def process_batch(
        self,
        requests: Sequence[MmInput],
        *,
        return_exceptions: bool = False,
        compact: bool = False,
    ) -> list[MmOutput | MmError]:
        """Many requests, their items all fanned out through the one pool, results in order.

        Each request succeeds or fails on its own. With ``return_exceptions=True`` (what a
        server wants) a failed request's entry is its `MmError`; otherwise the error of the
        lowest-index failed request is raised. Errors that are not `MmError` (bugs in the
        driver itself) always propagate.

        ``compact=True`` gives each item's feature as a `CompactTensor` (uint8 codes plus
        tables, ``expand()`` bit-identical to the full feature); it needs a family that
        offers it (``Family.offers_compact``), else the call fails with an `MmRequestError`
        before any work."""
        if compact and not self._offers_compact:
            raise self._no_compact()
        ids: list[npt.NDArray[np.int64] | None] = []
        failed: dict[int, MmError] = {}
        sources: list[tuple[int, _Src]] = []
        for r, req in enumerate(requests):
            try:
                req_ids = self._check(req)
                got = self._fetch(req)
            except MmError as e:
                failed[r] = e
                ids.append(None)
                continue
            ids.append(req_ids)
            sources += [(r, src) for src in got]
        kthreads = self.par.kernel_threads(len(sources))
        scope = _current_scope() if sources else None
        jobs = [
            _Job(r, s.item, s.data, s.kind, kthreads, compact, scope, s.video) for r, s in sources
        ]
        done: list[list[_Done]] = [[] for _ in requests]
        handles = self.par.submit(self._run_item, jobs)  # a single item runs inline
        for job, handle in zip(jobs, handles, strict=True):
            if job.request in failed:
                handle.cancel()
                continue
            res = handle.result()
            if isinstance(res, MmError):
                failed[job.request] = res
            else:
                done[job.request].append(res)
        results: list[MmOutput | MmError] = []
        for r, req in enumerate(requests):
            err = failed.get(r)
            if err is None:
                these = ids[r]
                assert these is not None
                try:
                    results.append(self._finish(req, these, done[r]))
                    continue
                except MmError as e:
                    err = e
            if not return_exceptions:
                raise err
            results.append(err)
        return results

    def _no_compact(self) -> MmRequestError:
        return MmRequestError(
            f"family {self.family.name!r} does not offer the compact form (compact=True)"
        )

    def cache_stats(self) -> CacheStats | None:
        """Hit, miss, wait and eviction counters of the feature cache, per form and summed,
        and what it holds (None without one)."""
        return None if self.cache is None else self.cache.stats()

    def count_tokens(self, request: MmInput) -> TokenCount:
        """Prompt length and per-item tokens from image headers alone (no pixel decode), from
        the family's plan of each upright size: what `process` would make of the request,
        whose placeholder rules are applied here too (nothing `process` refuses is counted)."""
        ids = self._check(request)
        self._check_prompt(ids, len(request.images), len(request.videos))
        items = self._fetch(request)
        limits = self.spec.spec.limits
        exif = bool(self.spec.spec.decode.exif_orientation)
        plans: list[Plan] = []
        for src in items:
            try:
                if src.video is not None:
                    plans.append(self._video_plan_of_header(src.data, src.video))
                    continue
                if self._source_modes is not None:  # refused here as `process` refuses it
                    check_source_mode(src.data, self._source_modes, self._source_modes_reason)
                # The limits are checked by the kernels' one rule, as the decoder does.
                w, h = _native.image_dimensions(
                    src.data, exif, limits.max_image_pixels, limits.max_image_side
                )
                plans.append(self._call(self.family.checked_plan, w, h))
            except MmError as e:
                modality = "image" if src.video is None else "video"
                raise _attribute(e, src.item, src.kind, modality) from e.__cause__
        modalities = ["image" if s.video is None else "video" for s in items]
        if request.videos:  # per item in prompt order, as `process` answers them
            _, order = self._media_layout(ids, plans, modalities)
            plans = [plans[i] for i in order]
            modalities = [modalities[i] for i in order]
        per_item = [p.content for p in plans]
        length = len(ids) + sum(p.length - p.replaces for p in plans)
        return TokenCount(length, per_item, modalities)

    def _video_plan_of_header(
        self, data: bytes | bytearray | memoryview, options: VideoOptions
    ) -> Plan:
        limits = video_limits(self.spec.spec.limits)
        header = header_of(data, limits, count=False)
        vplan = self._call(checked_video_plan, self.family, header, options)
        check_decoded_bytes(header, len(set(vplan.indices)), limits)
        check_feature_bytes(self.family, vplan, limits)
        return vplan.plan

    def check_prompt(self, input_ids: Any, n_items: int, n_videos: int = 0) -> None:
        """Refuse, with a `LayoutError`, a prompt whose placeholders do not fit ``n_items``
        images and ``n_videos`` videos (one placeholder each, inside its markers): what
        `process` would refuse, said before any source is fetched or decoded."""
        self._check_prompt(_as_ids(input_ids), n_items, n_videos)

    def _check_prompt(self, ids: npt.NDArray[np.int64], n_items: int, n_videos: int = 0) -> None:
        ph, vph = self._placeholder, self._video_placeholder
        check_placeholders(
            ids, ph.token, n_items, ph.between
        )  # images: "media", as the layout says
        if vph is not None:
            check_placeholders(ids, vph.token, n_videos, vph.between, what="video")

    # -- steps -----------------------------------------------------------------------------
    def _call(self, fn: Callable[..., R], *args: Any) -> R:
        try:
            return fn(*args)
        except MmError:
            raise
        except Exception as e:
            raise _plugin_error(self.family, getattr(fn, "__name__", "a hook"), e) from e

    def _check(self, request: MmInput) -> npt.NDArray[np.int64]:
        """The request checks of docs/architecture.md (the request path), before any fetch."""
        ids = _as_ids(request.input_ids)
        if isinstance(request.images, (str, bytes, bytearray, memoryview)):
            raise MmRequestError(
                f"images must be a list of sources, not a single {type(request.images).__name__}"
            )
        videos = request.videos
        if isinstance(videos, (str, bytes, bytearray, memoryview, Mapping)):
            raise MmRequestError(
                f"videos must be a list of sources, not a single {type(videos).__name__}"
            )
        fam = self.family
        if videos and not self._takes_videos:
            raise self._refused("videos")
        n = len(request.images)
        if n == 0 and self._needs_images:
            raise MmRequestError(
                f"request without image sources: family {fam.name!r} needs at least one image"
            )
        if n and not self._takes_images:
            raise self._refused("images")
        max_items = self._max_items
        if n + len(videos) > max_items:
            what = f"{n} image(s)" + (f" and {len(videos)} video(s)" if videos else "")
            raise LimitError(
                f"request has {what}, over limits.max_items = {max_items}",
                limit="max_items",
                limit_value=max_items,
                value=n + len(videos),
            )
        if videos:  # decoding a video costs far more than this scan: refuse a bad prompt first
            self._check_prompt(ids, n, len(videos))
        return ids

    def _refused(self, what: str) -> UnsupportedModalityError:
        fam = self.family
        if what == "videos" and self._video_refusal is not None:
            return UnsupportedModalityError(str(self._video_refusal))
        return UnsupportedModalityError(
            f"family {fam.name!r} does not accept {what} (it accepts: "
            f"{', '.join(sorted(fam.modalities)) or 'nothing'})"
        )

    def _fetch(self, request: MmInput) -> list[_Src]:
        """The request's images, then its videos, fetched under one budget."""
        images, videos = request.images, request.videos
        if not images and not videos:
            return []
        spec = self.spec.spec
        if not videos:
            got = _fetch_all()(list(images), policy=spec.fetch, limits=spec.limits)
            return [_Src(f.data, f.kind, k) for k, f in enumerate(got)]
        sources, options = sources_and_options(videos)
        n = len(images)
        got = _fetch_all()([*images, *sources], policy=spec.fetch, limits=spec.limits, n_images=n)
        out = [_Src(f.data, f.kind, k) for k, f in enumerate(got[:n])]
        out += [
            _Src(f.data, f.kind, k, o)
            for k, (f, o) in enumerate(zip(got[n:], options, strict=True))
        ]
        return out

    def _run_item(self, job: _Job) -> _Done | MmError:
        """hash -> decode -> process for one item (or hash -> cache hit, with no decode);
        errors come back as values, attributed."""
        modality = "image" if job.video is None else "video"
        try:
            if job.scope is not None:
                job.scope.check()  # a cancelled request starts no more kernel work
            if self.cache is None:
                digest = _native.content_hash(job.data)
                return _Done(digest, self._compute(job.data, job.compact, job), modality)
            hexd = _native.blake3_hex(job.data)
            # `content_hash` is the digest's first 8 bytes, big-endian: one pass gives both.
            digest = int(hexd[:16], 16)
            key: tuple[str, ...] = (self.spec_fingerprint, hexd)
            if job.video is not None:
                key += ("video", options_key(job.video))
            # The form asked for is the form kept: a hit hands out the stored (read-only)
            # buffers as they are, and a miss computes that form directly.
            form: Form = "compact" if job.compact else "full"
            got, _ = self.cache.get_or_compute(
                key, form, lambda: self._compute(job.data, job.compact, job)
            )
            return _Done(digest, got, modality)
        except _Failed as f:
            return f.error
        except MmError as e:
            return _attribute(e, job.item, job.kind, modality)

    def _compute(
        self, data: bytes | bytearray | memoryview, compact: bool, job: _Job
    ) -> ProcessedItem:
        if job.video is not None:
            return self._compute_video(data, compact, job, job.video)
        if self._source_modes is not None:  # the spec's decode policy, before any pixel
            check_source_mode(data, self._source_modes, self._source_modes_reason)
        fam = self.family
        cancel = None if job.scope is None else job.scope.flag
        if self._composed:
            streamed = self._compute_streamed(data, compact, job, cancel)
            if streamed is not None:
                return streamed
        image = _native.image_decode_rgb(data, **self._decode_kw)

        def process() -> ProcessedItem:
            plan = fam.checked_plan(int(image.shape[1]), int(image.shape[0]))
            return fam._process(image, plan, job.threads, compact, cancel)

        return self._family_call(f"processing image {job.item}", process)

    def _compute_streamed(
        self,
        data: bytes | bytearray | memoryview,
        compact: bool,
        job: _Job,
        cancel: _native.CancelFlag | None,
    ) -> ProcessedItem | None:
        """An image whose rows stream (a JPEG or a non-interlaced PNG with no orientation to
        apply) planned from its header and decoded straight into the feature: with threads to
        spare, its row bands start while the rest of it decodes. The item and the errors are
        those of the two-step path (decode, then the feature), bit for bit; None when the
        image does not stream, or when its header or plan is refused, so that the two-step
        path reports that as it would (a broken scan before a refused size)."""
        fam = self.family
        try:
            size = _native.image_stream_size(data, **self._decode_kw)
            if size is None:
                return None
            plan = fam.checked_plan(*size)
        except Exception:
            return None
        return self._family_call(
            f"processing image {job.item}",
            lambda: fam._process_encoded(
                data, size, plan, self._decode_kw, job.threads, compact, cancel
            ),
        )

    def _compute_video(
        self, data: bytes | bytearray | memoryview, compact: bool, job: _Job, options: VideoOptions
    ) -> ProcessedItem:
        limits = video_limits(self.spec.spec.limits)
        return self._family_call(
            f"processing video {job.item}",
            lambda: process_video(
                self.family,
                data,
                options,
                limits,
                threads=job.threads,
                compact=compact,
                scope=job.scope,
            ),
        )

    def _family_call(self, what: str, fn: Callable[[], R]) -> R:
        """``fn()``, which runs the family's code: a request error passes, a `PluginError` (the
        plugin at fault, not the request's item) or any other exception (a plugin bug, named
        by ``what``) fails the request unattributed to an item."""
        try:
            return fn()
        except PluginError as e:
            raise _Failed(e) from e
        except MmError:
            raise
        except Exception as e:
            raise _Failed(_plugin_error(self.family, what, e)) from e

    def _media_layout(
        self, ids: npt.NDArray[np.int64], plans: Sequence[Plan], modalities: Sequence[str]
    ) -> tuple[TokenLayout, list[int]]:
        """The layout of a prompt with videos, and the prompt order of the items (indices
        into ``plans``, which hold the images then the videos, as ``modalities`` says)."""
        images = [k for k, m in enumerate(modalities) if m == "image"]
        videos = [k for k, m in enumerate(modalities) if m == "video"]
        ph, vph = self._placeholder, self._video_placeholder
        assert vph is not None
        layout, order = layout_by_placeholder_kinds(
            ids,
            [
                (ph.token, ph.between, [plans[k].tokens for k in images]),
                (vph.token, vph.between, [plans[k].tokens for k in videos]),
            ],
        )
        return layout, [(images, videos)[kind][k] for kind, k in order]

    def _finish(
        self, request: MmInput, ids: npt.NDArray[np.int64], done: Sequence[_Done]
    ) -> MmOutput:
        fam = self.family
        plans: list[Plan] = [d.processed.plan for d in done]  # type: ignore[misc]
        if request.videos:
            layout, order = self._media_layout(ids, plans, [d.modality for d in done])
            done = [done[k] for k in order]
            plans = [plans[k] for k in order]
        else:
            layout = fam.layout(ids, plans)
        expanded = apply_layout(ids, layout, len(done))
        items = [
            MmItem(
                d.processed.feature,
                d.processed.aux,
                d.hash,
                d.processed.geometry,
                p.content,
                d.modality,
            )
            for d, p in zip(done, plans, strict=True)
        ]
        length = len(expanded.input_ids)
        geometries = [d.processed.geometry for d in done]
        try:
            positions = fam.positions(length, expanded.offsets, geometries, expanded.input_ids)
        except MmError:
            raise
        except Exception as e:
            raise _plugin_error(fam, "positions", e) from e
        _check_positions(fam, positions, length)
        return MmOutput(
            expanded.input_ids,
            items,
            expanded.offsets,
            positions,
            fam.name,
            self.spec_fingerprint,
            request.rid,
        )


class _Failed(Exception):
    """A plugin's failure already turned into its `PluginError` (not attributed to an item:
    the plugin is at fault, not the request's image)."""

    def __init__(self, error: MmError) -> None:
        super().__init__(str(error))
        self.error = error


_FETCH_ALL: Callable[..., Any] | None = None


def _fetch_all() -> Callable[..., Any]:
    """`fetch.fetch_all`, imported on first use (the fetch stack is not needed before)."""
    global _FETCH_ALL
    if _FETCH_ALL is None:
        from ._fetch import fetch_all

        _FETCH_ALL = fetch_all
    return _FETCH_ALL


def _check_positions(fam: Family[Any], positions: object, length: int) -> None:
    if type(positions) is MRope:  # the common case first, without the isinstance chain
        p = positions.positions
        if p.shape == (3, length) and p.dtype == np.int64:
            return
    if isinstance(positions, Rope1D):
        ok = positions.length == length
    elif isinstance(positions, MRope):
        p = positions.positions
        ok = p.dtype == np.int64 and p.shape == (3, length)
    else:
        ok = False
    if not ok:
        shape = getattr(getattr(positions, "positions", None), "shape", None)
        raise PluginError(
            f"family {fam.name!r}: positions ({type(positions).__name__}"
            f"{'' if shape is None else f' of shape {list(shape)}'}) do not fit the expanded "
            f"prompt of {length} token(s)"
        )


__all__ = ["Par", "Pipeline", "pipeline_from_spec"]
