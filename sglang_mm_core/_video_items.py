"""A request's videos: the source forms and their per-video options, what a family plans for
one video (`VideoPlan`), and the steps the driver runs for it (header -> plan -> sampled frames
streamed through the family's features -> the writer's temporal layout).

A video source is what an image source is, or a mapping ``{"video": source, "fps": 2.0, ...}``
with the options qwen-vl-utils' message elements take, under the same names. The frames are
never held at full size together: each sampled frame is resized and coded as it is decoded,
and only its uint8 codes are kept until the writer lays the groups out."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._carriers import ProcessedItem, Source, Tensor
from ._compact import CompactTensor
from ._plan import Plan
from ._video import VideoHeader, VideoLimits, count_frames, iter_frames, probe
from .errors import KernelArgumentError, LimitError, MmRequestError, PluginError

if TYPE_CHECKING:
    from ._family import Family
    from ._fetch.cancel import CancelScope
    from ._spec import Limits


class VideoOptions(BaseModel):
    """Per-video options, named as qwen-vl-utils names them; None leaves the family's params
    in charge. Which ones a family honours, and how, is the family's to say (it refuses the
    others with a `KernelArgumentError` naming them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fps: float | None = Field(None, gt=0, allow_inf_nan=False, description="Frames per second.")
    nframes: int | None = Field(None, gt=0, description="Frames to sample (instead of fps).")
    min_frames: int | None = Field(None, gt=0, description="Fewest frames fps sampling takes.")
    max_frames: int | None = Field(None, gt=0, description="Most frames fps sampling takes.")
    min_pixels: int | None = Field(None, gt=0, description="Per-frame pixel lower bound.")
    max_pixels: int | None = Field(None, gt=0, description="Per-frame pixel upper bound.")
    total_pixels: int | None = Field(None, gt=0, description="Pixel budget of the whole clip.")
    video_start: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="Start of the clip, in seconds."
    )
    video_end: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="End of the clip, in seconds."
    )
    resized_height: int | None = Field(None, gt=0, description="Frame height asked for.")
    resized_width: int | None = Field(None, gt=0, description="Frame width asked for.")

    def set(self) -> dict[str, Any]:
        """The options given (not None), for error messages and cache keys."""
        return self.model_dump(exclude_none=True)


NO_OPTIONS = VideoOptions()


def video_source(source: Source | Mapping[str, Any], index: int) -> tuple[Source, VideoOptions]:
    """A video source and its options: a plain source has none; a mapping holds its source
    under ``"video"`` beside them. A bad option is an `MmRequestError` naming it."""
    if not isinstance(source, Mapping):
        return source, NO_OPTIONS
    if "video" not in source:
        raise MmRequestError(
            f"video {index}: a video given as a mapping holds its source under 'video' "
            f"(keys given: {', '.join(sorted(map(str, source))) or 'none'})"
        )
    options = {k: v for k, v in source.items() if k != "video"}
    try:
        parsed = VideoOptions.model_validate(options)
    except ValidationError as e:
        bad = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'options'}: {err['msg']}" for err in e.errors()
        )
        raise MmRequestError(f"video {index}: bad video options ({bad})") from None
    return source["video"], parsed


@dataclass(frozen=True)
class VideoPlan:
    """What one video becomes, decided from its header and options alone:

    - ``plan``: its placeholder's tokens, its `Geometry` (the grid ``(t, gh, gw)`` and
      ``seconds_per_grid_t``) and the one `Part` every frame is resized by;
    - ``indices``: the frames to decode, in the order the feature holds them (an index may
      repeat);
    - ``aux``: its auxiliary tensors (e.g. ``video_grid_thw``)."""

    plan: Plan
    indices: tuple[int, ...]
    aux: Mapping[str, Tensor] = field(default_factory=dict)


def video_limits(limits: Limits) -> VideoLimits:
    """A spec's limits as the video decoder checks them (the request's deadline reaches the
    decode loop through its cancel scope)."""
    return VideoLimits(
        max_pixels=limits.max_image_pixels,
        max_side=limits.max_image_side,
        max_frames=limits.max_video_frames,
        max_duration_s=limits.max_video_duration_s,
        max_decoded_bytes=limits.max_video_decoded_bytes,
        max_feature_bytes=limits.max_video_feature_bytes,
    )


def check_feature_bytes(family: Family[Any], vplan: VideoPlan, limits: VideoLimits) -> None:
    """Refuse a video whose full feature would be over ``limits.max_feature_bytes``, from its
    plan: processing checks it before decoding, and so does a token count (which must refuse
    what processing would), whichever form is asked for."""
    features, _ = family._video_compiled()
    table = features.table
    if table is None:
        return
    size = features.writer.video_bytes(vplan.plan, table, len(vplan.indices))
    if size is not None and size > limits.max_feature_bytes:
        raise LimitError(
            f"{len(vplan.indices)} frames at {vplan.plan.geometry.width}x"
            f"{vplan.plan.geometry.height} make a {size}-byte feature, over "
            f"max_video_feature_bytes {limits.max_feature_bytes}",
            limit="max_video_feature_bytes",
            limit_value=limits.max_feature_bytes,
            value=size,
        )


def header_of(
    data: bytes | bytearray | memoryview, limits: VideoLimits, *, count: bool
) -> VideoHeader:
    """The video's header; a stream that states no frame count has its packets counted when
    ``count`` (processing), and is refused otherwise (a token count reads headers only)."""
    header = probe(data, limits)
    if header.frames is None:
        if not count:
            raise MmRequestError(
                "the video's container states no frame count, so its tokens cannot be counted "
                "from the header (process it instead)"
            )
        header = replace(header, frames=count_frames(data, limits))
    return header


def checked_video_plan(
    family: Family[Any], header: VideoHeader, options: VideoOptions
) -> VideoPlan:
    """The family's `VideoPlan` for a header, checked to be one (else a `PluginError`)."""
    got = family.video_plan(header, options)
    if not isinstance(got, VideoPlan) or not isinstance(got.plan, Plan):
        raise PluginError(
            f"family {family.name!r}: video_plan returned {type(got).__name__}, not a VideoPlan"
        )
    if not got.indices:
        raise PluginError(f"family {family.name!r}: video_plan samples no frame")
    frames = header.frames
    if frames is not None and not all(0 <= i < frames for i in got.indices):
        raise PluginError(
            f"family {family.name!r}: video_plan samples frames outside 0..{frames - 1}"
        )
    return got


_DONE = object()


class _Raised:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetched(items: Iterator[Any], depth: int = 2) -> Iterator[Any]:
    """``items`` pulled on a helper thread, at most ``depth`` ahead of the caller: the next
    frames decode (FFmpeg and PyAV's conversion release the GIL) while the caller resizes
    this one. An error of ``items`` is raised here, in order; when the caller stops early the
    helper stops at its next item and ``items`` is closed on the helper's thread."""
    ready: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def pump() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as e:  # handed to the caller, raised there
            put(_Raised(e))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    helper = threading.Thread(target=pump, name="sglang-mm-video-decode", daemon=True)
    helper.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, _Raised):
                raise item.error
            yield item
    finally:
        stop.set()
        helper.join()


def process_video(
    family: Family[Any],
    data: bytes | bytearray | memoryview,
    options: VideoOptions,
    limits: VideoLimits,
    *,
    threads: int,
    compact: bool,
    scope: CancelScope | None = None,
) -> ProcessedItem:
    """One video through its plan: each sampled frame decoded, resized and coded as it comes
    (the decoded frame is dropped at once), then the codes laid out by the writer."""
    header = header_of(data, limits, count=True)
    vplan = checked_video_plan(family, header, options)
    check_feature_bytes(family, vplan, limits)
    features, recipe = family._video_compiled()
    table = features.table
    if table is None or recipe is None:
        raise PluginError(f"family {family.name!r}: video features need a table and a resample")
    parts = [p._native() for p in vplan.plan.parts]
    sink = None if compact else features.writer.video_sink(vplan.plan, table, len(vplan.indices))
    positions: dict[int, list[int]] = {}
    for k, i in enumerate(vplan.indices):
        positions.setdefault(i, []).append(k)
    codes: dict[int, npt.NDArray[np.uint8]] = {}
    flag = None if scope is None else scope.flag
    for index, frame in prefetched(iter_frames(data, vplan.indices, limits)):
        if scope is not None:
            scope.check()
        got = recipe.run(frame, parts, table._native, True, max(1, threads), cancel=flag)
        if sink is None:
            codes[index] = got
        else:  # the full feature written as it comes: no clip's worth of codes is held
            for k in positions[index]:
                sink.put(k, got)
    if sink is not None:
        feature: Tensor | CompactTensor = sink.finish()
    else:
        packed = features.writer.video([codes[i] for i in vplan.indices], vplan.plan, table)
        feature = packed if compact else packed.expand()
    return ProcessedItem(feature, dict(vplan.aux), vplan.plan.geometry, vplan.plan)


def options_key(options: VideoOptions) -> str:
    """The options as a cache-key part: the same video under other options is another item."""
    return json.dumps(options.set(), sort_keys=True)


def sources_and_options(
    videos: Sequence[Source | Mapping[str, Any]],
) -> tuple[list[Source], list[VideoOptions]]:
    """Each video's source and options, in order."""
    sources: list[Source] = []
    options: list[VideoOptions] = []
    for k, v in enumerate(videos):
        s, o = video_source(v, k)
        sources.append(s)
        options.append(o)
    return sources, options


def unsupported_option(name: str, value: Any, why: str) -> KernelArgumentError:
    """The error a family raises for a per-video option it cannot honour."""
    return KernelArgumentError(f"video option {name}={value!r} is not supported: {why}")


__all__ = [
    "NO_OPTIONS",
    "VideoOptions",
    "VideoPlan",
    "checked_video_plan",
    "header_of",
    "options_key",
    "process_video",
    "sources_and_options",
    "unsupported_option",
    "video_limits",
    "video_source",
]
