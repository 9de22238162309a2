"""Frame sampling and the per-video target size of the Qwen-VL video processors, bit-exact with
their two references (issue #23, "Sample and resize"); not yet wired into the request path.

- ``hf``: transformers' ``Qwen2VLVideoProcessor`` / ``Qwen3VLVideoProcessor`` (5.23):
  `hf_frame_indices` (their ``sample_frames``, or every frame with ``do_sample_frames=False``)
  and `hf_frame_size` (their ``resize``: ``smart_resize`` with ``cap_pixels_per_frame``).
- ``qwen_vl_utils``: qwen-vl-utils' ``vision_process`` (0.0.14): `qwen_vl_utils_nframes`
  (``smart_nframes``), `qwen_vl_utils_frame_range` (``calculate_video_frame_range``),
  `qwen_vl_utils_frame_indices` (its readers' ``torch.linspace(...).round().long()``),
  `qwen_vl_utils_sample_fps` and `qwen_vl_utils_frame_size` (``fetch_video``'s pixel budget).

The arithmetic is the references' own, in their order: Python's IEEE doubles where they compute
in Python (``round`` ties to even), numpy float64 where they call numpy, and numpy float32 where
they compute in torch's default float32:

- ``torch.arange(0, total, total / n).int()`` (Qwen2-VL): the length is
  ``ceil(total / step)`` in doubles (so it can be ``n + 1``), element ``i`` is ``step * i`` in
  double rounded once to float32, then truncated;
- ``torch.linspace(start, end, n)`` (qwen-vl-utils): float32 throughout, ``step = (end -
  start) / (n - 1)``, the first ``n // 2`` elements ``start + step * i`` and the rest
  ``end - step * (n - 1 - i)``, then rounded half to even.

Where a reference raises (an assertion, a ``ValueError``, a ``TypeError`` or a division by zero
alike), these raise `KernelArgumentError` naming the argument."""

from __future__ import annotations

import math
import operator
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from sglang_mm_core.plugin import KernelArgumentError, temporal_smart_resize

from .sizes import smart_resize as _hf_image_smart_resize

Generation = Literal["qwen2", "qwen3"]
Reader = Literal["torchvision", "decord", "torchcodec"]

# transformers' class defaults, per generation.
_HF_DO_SAMPLE_FRAMES = {"qwen2": False, "qwen3": True}
#: Qwen3-VL's default ``fps`` (Qwen2-VL has none).
_HF_QWEN3_FPS: float = 2
_HF_MIN_FRAMES = 4
_HF_MAX_FRAMES = 768
_HF_TEMPORAL_PATCH_SIZE = 2
_HF_PATCH_SIZE = {"qwen2": 14, "qwen3": 16}
_HF_MERGE_SIZE = 2
_HF_SHORTEST_EDGE = {"qwen2": 128 * 28 * 28, "qwen3": 128 * 32 * 32}
_HF_LONGEST_EDGE = {"qwen2": 28 * 28 * 768, "qwen3": 32 * 32 * 768}
_HF_MAX_VIDEO_TOKENS = {"qwen2": 128000, "qwen3": 768}
#: Qwen3-VL's ``sample_frames`` assumes this rate when the metadata has none.
_HF_QWEN3_FALLBACK_FPS = 24

# qwen-vl-utils' module constants.
FRAME_FACTOR = 2
FPS = 2.0
FPS_MIN_FRAMES = 4
FPS_MAX_FRAMES = 768
SPATIAL_MERGE_SIZE = 2
IMAGE_MIN_TOKEN_NUM = 4
IMAGE_MAX_TOKEN_NUM = 16384
VIDEO_MIN_TOKEN_NUM = 128
VIDEO_MAX_TOKEN_NUM = 768
MAX_RATIO = 200
#: qwen-vl-utils reads ``MODEL_SEQ_LEN`` from the environment at import (this default).
MODEL_SEQ_LEN = 128000


def hf_frame_indices(
    total_frames: int,
    video_fps: float | None,
    *,
    generation: Generation,
    do_sample_frames: bool | None = None,
    fps: float | None = None,
    num_frames: int | None = None,
    min_frames: int | None = None,
    max_frames: int | None = None,
    temporal_patch_size: int | None = None,
) -> NDArray[np.int64]:
    """The frame indices transformers' ``Qwen2VLVideoProcessor`` (``"qwen2"``, also Qwen2.5-VL)
    or ``Qwen3VLVideoProcessor`` (``"qwen3"``, also Qwen3.5) takes from a video of
    ``total_frames`` frames at ``video_fps`` (``VideoMetadata.fps``; ``None`` if unknown).

    ``fps`` and ``num_frames`` are ``sample_frames``' own arguments (``None``: the processor's
    default, ``None`` for Qwen2-VL and 2 for Qwen3-VL); ``min_frames``, ``max_frames``,
    ``temporal_patch_size`` and ``do_sample_frames`` are the processor's settings (``None``: the
    class defaults 4, 768, 2, and ``False`` for Qwen2-VL, ``True`` for Qwen3-VL). With
    ``do_sample_frames`` false the processor keeps every frame.

    Qwen2-VL rounds ``num_frames`` to the temporal patch (half to even), or derives it from
    ``fps`` (floored to the patch, within ``[min_frames, min(max_frames, total_frames)]``), and
    takes ``torch.arange(0, total, total / num_frames).int()``. Qwen3-VL truncates
    ``total / video_fps * fps`` (no rounding to the patch; an unknown rate counts as 24), ignores
    a per-call ``min_frames`` / ``max_frames`` (so here they are the processor's), and takes
    ``np.linspace(0, total - 1, num_frames).round()``. Note that the processors' ``preprocess``
    fills ``fps`` with the default, so Qwen3-VL's ``preprocess`` refuses ``num_frames`` unless
    ``fps=None`` is passed with it; this function is ``sample_frames`` itself."""
    total = _count("total_frames", total_frames)
    gen = _generation(generation)
    do_sample = _HF_DO_SAMPLE_FRAMES[gen] if do_sample_frames is None else bool(do_sample_frames)
    if not do_sample:
        return np.arange(total, dtype=np.int64)
    if fps is not None and num_frames is not None:
        raise KernelArgumentError("fps and num_frames are mutually exclusive; pass only one")
    if gen == "qwen2":
        return _hf_qwen2_indices(
            total,
            video_fps,
            fps,
            num_frames,
            _HF_MIN_FRAMES if min_frames is None else min_frames,
            _HF_MAX_FRAMES if max_frames is None else max_frames,
            _HF_TEMPORAL_PATCH_SIZE if temporal_patch_size is None else temporal_patch_size,
        )
    return _hf_qwen3_indices(
        total,
        video_fps,
        _HF_QWEN3_FPS if fps is None else fps,
        num_frames,
        _HF_MIN_FRAMES if min_frames is None else min_frames,
        _HF_MAX_FRAMES if max_frames is None else max_frames,
    )


def _hf_qwen2_indices(
    total: int,
    video_fps: float | None,
    fps: float | None,
    num_frames: int | None,
    min_frames: int,
    max_frames: int,
    temporal: int,
) -> NDArray[np.int64]:
    if temporal == 0:
        raise KernelArgumentError("temporal_patch_size must not be zero")
    n: float | int
    if num_frames is not None:
        n = round(num_frames / temporal) * temporal
    elif fps is not None:
        if video_fps is None:
            raise KernelArgumentError("fps sampling needs the video's frame rate (video_fps)")
        if video_fps == 0:
            raise KernelArgumentError("video_fps must not be zero")
        max_frames = math.floor(min(max_frames, total) / temporal) * temporal
        n = total / video_fps * fps
        n = min(max(n, min_frames), max_frames, total)
        n = math.floor(n / temporal) * temporal
    else:
        raise KernelArgumentError(
            "Qwen2-VL's sample_frames needs fps or num_frames (transformers fails without either)"
        )
    if n > total:
        raise KernelArgumentError(
            f"num_frames={n} exceeds total_frames={total}; decrease num_frames or fps"
        )
    if n == 0:
        raise KernelArgumentError("num_frames rounds to 0 frames (division by zero)")
    step = total / n
    if step < 0 or (step == 0 and total == 0):
        raise KernelArgumentError(f"num_frames={n} gives the invalid arange step {step!r}")
    size = math.ceil(total / step)
    # torch.arange(0, total, step) in float32: each element step * i in double, then float32.
    values = (step * np.arange(size, dtype=np.float64)).astype(np.float32)
    return values.astype(np.int32).astype(np.int64)


def _hf_qwen3_indices(
    total: int,
    video_fps: float | None,
    fps: float,
    num_frames: int | None,
    min_frames: int,
    max_frames: int,
) -> NDArray[np.int64]:
    if num_frames is None:
        rate = _HF_QWEN3_FALLBACK_FPS if video_fps is None else video_fps
        if rate == 0:
            raise KernelArgumentError("video_fps must not be zero")
        num_frames = int(total / rate * fps)
        num_frames = min(max(num_frames, min_frames), max_frames, total)
    n = operator.index(num_frames)
    if n < 0:
        raise KernelArgumentError(f"num_frames must be non-negative: {n}")
    return np.linspace(0, total - 1, n).round().astype(int).astype(np.int64)


def hf_frame_size(
    height: int,
    width: int,
    num_frames: int,
    *,
    generation: Generation,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
    patch_size: int | None = None,
    merge_size: int | None = None,
    temporal_patch_size: int | None = None,
    cap_pixels_per_frame: bool = False,
    max_video_tokens: int | None = None,
) -> tuple[int, int]:
    """``(height', width')`` that transformers' video processor resizes every frame of a
    ``height x width`` video of ``num_frames`` sampled frames to (its ``resize``).

    ``min_pixels`` / ``max_pixels`` are ``size["shortest_edge"]`` / ``size["longest_edge"]``
    (defaults: Qwen2-VL 128·28² / 768·28², Qwen3-VL 128·32² / 768·32²), the factor is
    ``patch_size * merge_size`` (14 or 16, times 2). Qwen2-VL applies the image ``smart_resize``
    per frame, its bound with ``cap_pixels_per_frame`` being ``max(min(longest, int(tokens·f²·0.9)
    · temporal // num_frames), int(shortest·1.05))``; Qwen3-VL's own ``smart_resize`` bounds the
    whole clip (``round(t / temporal)·temporal·h·w``, scaling small sides up first), the cap being
    ``num_frames · max(min(tokens·f², longest // num_frames), int(shortest·1.05))``. A
    ``cap_pixels_per_frame`` of ``None`` in transformers means ``False`` (with a warning)."""
    gen = _generation(generation)
    h, w = _count("height", height), _count("width", width)
    t = _count("num_frames", num_frames)
    shortest = _HF_SHORTEST_EDGE[gen] if min_pixels is None else min_pixels
    longest = _HF_LONGEST_EDGE[gen] if max_pixels is None else max_pixels
    if not shortest or not longest:
        raise KernelArgumentError(
            f"min_pixels ({shortest}) and max_pixels ({longest}) must both be non-zero"
        )
    patch = _HF_PATCH_SIZE[gen] if patch_size is None else patch_size
    merge = _HF_MERGE_SIZE if merge_size is None else merge_size
    factor = patch * merge
    temporal = _HF_TEMPORAL_PATCH_SIZE if temporal_patch_size is None else temporal_patch_size
    tokens = _HF_MAX_VIDEO_TOKENS[gen] if max_video_tokens is None else max_video_tokens
    if gen == "qwen2":
        bound = longest
        if cap_pixels_per_frame:
            if t == 0:
                raise KernelArgumentError("num_frames must be positive to cap pixels per frame")
            total_pixels = int(tokens * factor * factor * 0.9)
            bound = max(min(bound, total_pixels * temporal // t), int(shortest * 1.05))
        return _hf_image_smart_resize(h, w, factor, shortest, bound, "hf")
    bound = longest
    if cap_pixels_per_frame:
        if t == 0:
            raise KernelArgumentError("num_frames must be positive to cap pixels per frame")
        frame_cap = tokens * factor * factor
        per_frame = max(min(frame_cap, longest // t), int(shortest * 1.05))
        bound = per_frame * t
    return _qwen3_smart_resize(t, h, w, temporal, factor, shortest, bound)


def _qwen3_smart_resize(
    num_frames: int,
    height: int,
    width: int,
    temporal_factor: int,
    factor: int,
    min_pixels: int,
    max_pixels: int,
) -> tuple[int, int]:
    """transformers' ``qwen3_vl.video_processing_qwen3_vl.smart_resize``: the core's
    `temporal_smart_resize`, which GLM-4.xV's processors share."""
    return temporal_smart_resize(
        num_frames,
        height,
        width,
        temporal_factor=temporal_factor,
        factor=factor,
        min_pixels=min_pixels,
        max_pixels=max_pixels,
    )


def qwen_vl_utils_nframes(
    total_frames: int,
    video_fps: float,
    *,
    fps: float | None = None,
    nframes: int | float | None = None,
    min_frames: int | float | None = None,
    max_frames: int | float | None = None,
) -> int:
    """qwen-vl-utils' ``smart_nframes``: the number of frames taken from ``total_frames`` at
    ``video_fps``; the options are the message element's keys (``None``: absent). ``nframes`` is
    rounded to ``FRAME_FACTOR`` (half to even); otherwise ``total / video_fps * fps`` (``fps``
    2.0) is clamped to ``[ceil2(min_frames or 4), floor2(max_frames or min(768, total))]`` and to
    ``total``, then floored to 2. A result outside ``[2, total]`` is refused, as there."""
    total = _count("total_frames", total_frames)
    if fps is not None and nframes is not None:
        raise KernelArgumentError("fps and nframes are mutually exclusive; pass only one")
    n: int | float
    if nframes is not None:
        n = round(nframes / FRAME_FACTOR) * FRAME_FACTOR
    else:
        rate = FPS if fps is None else fps
        low = math.ceil((FPS_MIN_FRAMES if min_frames is None else min_frames) / FRAME_FACTOR)
        min_n = low * FRAME_FACTOR
        high = min(FPS_MAX_FRAMES, total) if max_frames is None else max_frames
        max_n = math.floor(high / FRAME_FACTOR) * FRAME_FACTOR
        if video_fps == 0:
            raise KernelArgumentError("video_fps must not be zero")
        n = total / video_fps * rate
        n = min(min(max(n, min_n), max_n), total)
        n = math.floor(n / FRAME_FACTOR) * FRAME_FACTOR
    if not (FRAME_FACTOR <= n and n <= total):
        raise KernelArgumentError(
            f"nframes should be in the interval [{FRAME_FACTOR}, {total}], but got {n}"
        )
    return int(n)


def qwen_vl_utils_frame_range(
    total_frames: int,
    video_fps: float,
    *,
    video_start: float | None = None,
    video_end: float | None = None,
) -> tuple[int, int, int]:
    """qwen-vl-utils' ``calculate_video_frame_range`` (its decord and torchcodec readers):
    ``(start_frame, end_frame, frame_count)`` for the ``[video_start, video_end]`` seconds,
    clamped to the duration; the start rounds up (``ceil(start · fps)``) and the end down
    (``floor(end · fps)``, at most the last frame). An empty or reversed range is refused."""
    if video_fps <= 0:
        raise KernelArgumentError("video_fps must be a positive number")
    total = _count("total_frames", total_frames)
    if total <= 0:
        raise KernelArgumentError("total_frames must be a positive integer")
    if video_start is None and video_end is None:
        return 0, total - 1, total
    max_duration = total / video_fps
    if video_start is not None:
        start_frame = math.ceil(max(0.0, min(video_start, max_duration)) * video_fps)
    else:
        start_frame = 0
    if video_end is not None:
        end_frame = math.floor(max(0.0, min(video_end, max_duration)) * video_fps)
        end_frame = min(end_frame, total - 1)
    else:
        end_frame = total - 1
    if start_frame >= end_frame:
        raise KernelArgumentError(
            f"invalid time range (video_start {video_start!r}, video_end {video_end!r}): start "
            f"frame {start_frame} is not before end frame {end_frame}"
        )
    return start_frame, end_frame, end_frame - start_frame + 1


def qwen_vl_utils_frame_indices(
    total_frames: int,
    video_fps: float,
    *,
    reader: Reader = "torchvision",
    fps: float | None = None,
    nframes: int | float | None = None,
    min_frames: int | float | None = None,
    max_frames: int | float | None = None,
    video_start: float | None = None,
    video_end: float | None = None,
) -> NDArray[np.int64]:
    """The frame indices qwen-vl-utils' reader takes: ``torch.linspace(start, end,
    smart_nframes(...)).round().long()`` over ``[0, total - 1]`` (``"torchvision"``, whose
    ``read_video`` applies ``video_start`` / ``video_end`` by timestamp while decoding, so here
    ``total_frames`` must be the frames it read and the two are refused), or over
    `qwen_vl_utils_frame_range` with ``nframes`` counted in that range (``"decord"``,
    ``"torchcodec"``)."""
    if reader == "torchvision":
        if video_start is not None or video_end is not None:
            raise KernelArgumentError(
                "the torchvision reader cuts video_start/video_end by timestamp while decoding; "
                "pass the frames it read as total_frames"
            )
        start, end, count = 0, _count("total_frames", total_frames) - 1, total_frames
    elif reader in ("decord", "torchcodec"):
        start, end, count = qwen_vl_utils_frame_range(
            total_frames, video_fps, video_start=video_start, video_end=video_end
        )
    else:
        raise KernelArgumentError(f"unknown qwen-vl-utils reader {reader!r}")
    n = qwen_vl_utils_nframes(
        count, video_fps, fps=fps, nframes=nframes, min_frames=min_frames, max_frames=max_frames
    )
    return _torch_linspace_f32(start, end, n).round().astype(np.int64)


def _torch_linspace_f32(start: int, end: int, steps: int) -> NDArray[np.float32]:
    """``torch.linspace(start, end, steps)`` in float32 on the CPU (its kernel: float32 step,
    the first half counted from ``start``, the second half back from ``end``)."""
    if steps == 1:
        return np.array([start], dtype=np.float32)
    s, e = np.float32(start), np.float32(end)
    step = (e - s) / np.float32(steps - 1)
    i = np.arange(steps, dtype=np.int64)
    head = s + step * i.astype(np.float32)
    tail = e - step * (steps - 1 - i).astype(np.float32)
    return np.where(i < steps // 2, head, tail).astype(np.float32)


def qwen_vl_utils_sample_fps(nframes: int, total_frames: int, video_fps: float) -> float:
    """The ``sample_fps`` qwen-vl-utils' readers return: ``nframes / max(total, 1e-6) · fps``."""
    return nframes / max(total_frames, 1e-6) * video_fps


def qwen_vl_utils_frame_size(
    height: int,
    width: int,
    nframes: int,
    *,
    image_patch_size: int = 14,
    min_pixels: int | float | None = None,
    max_pixels: int | float | None = None,
    total_pixels: int | float | None = None,
    resized_height: int | None = None,
    resized_width: int | None = None,
    model_seq_len: int = MODEL_SEQ_LEN,
) -> tuple[int, int]:
    """The size qwen-vl-utils' ``fetch_video`` resizes the ``nframes`` sampled ``height x width``
    frames to. With factor ``f = image_patch_size · 2``: ``min_pixels`` defaults to ``128·f²``,
    ``total_pixels`` to ``model_seq_len·f²·0.9``, and the per-frame bound is ``max(min(768·f²,
    total_pixels / nframes · 2), int(min_pixels · 1.05))``, lowered (never raised) by
    ``max_pixels``. Both ``resized_height`` and ``resized_width`` given (one alone is ignored)
    size those instead, with the image bounds ``4·f²`` .. ``16384·f²``. The ``smart_resize`` is
    qwen-vl-utils' own: ``max(f, .)`` after rounding, none after scaling down, so a bound below
    ``f²`` can give an empty side, refused here (the reference fails in its resize)."""
    factor = _count("image_patch_size", image_patch_size) * SPATIAL_MERGE_SIZE
    n = _count("nframes", nframes)
    frame_min = VIDEO_MIN_TOKEN_NUM * factor * factor
    frame_max = VIDEO_MAX_TOKEN_NUM * factor * factor
    low = frame_min if min_pixels is None else min_pixels
    total = model_seq_len * factor * factor * 0.9 if total_pixels is None else total_pixels
    if n == 0:
        raise KernelArgumentError("nframes must be positive")
    bound = max(min(frame_max, total / n * FRAME_FACTOR), int(low * 1.05))
    bound = min(bound if max_pixels is None else max_pixels, bound)
    if resized_height is not None and resized_width is not None:
        h, w = _count("resized_height", resized_height), _count("resized_width", resized_width)
        size = _qvu_smart_resize(h, w, factor, None, None)
    else:
        h, w = _count("height", height), _count("width", width)
        size = _qvu_smart_resize(h, w, factor, low, bound)
    if size[0] <= 0 or size[1] <= 0:
        raise KernelArgumentError(
            f"qwen-vl-utils sizes the {w}x{h} video to {size[1]}x{size[0]}, which is empty"
        )
    return size


def _qvu_smart_resize(
    height: int,
    width: int,
    factor: int,
    min_pixels: int | float | None,
    max_pixels: int | float | None,
) -> tuple[int, int]:
    """qwen-vl-utils' ``smart_resize``, step for step (bounds may be floats)."""
    high = IMAGE_MAX_TOKEN_NUM * factor**2 if max_pixels is None else max_pixels
    low = IMAGE_MIN_TOKEN_NUM * factor**2 if min_pixels is None else min_pixels
    if not high >= low:
        raise KernelArgumentError(f"max_pixels ({high!r}) must be at least min_pixels ({low!r})")
    if height == 0 or width == 0:
        raise KernelArgumentError(f"video of {width}x{height} pixels has a zero side")
    if factor == 0:
        raise KernelArgumentError("image_patch_size must be non-zero")
    ratio = max(height, width) / min(height, width)
    if ratio > MAX_RATIO:
        raise KernelArgumentError(
            f"video of {width}x{height} pixels has aspect ratio {ratio!r}, over the limit of 200"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > high:
        if high <= 0:
            raise KernelArgumentError(f"max_pixels must be positive: {high!r}")
        beta = math.sqrt((height * width) / high)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < low:
        beta = math.sqrt(low / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _generation(generation: str) -> Generation:
    if generation == "qwen2":
        return "qwen2"
    if generation == "qwen3":
        return "qwen3"
    raise KernelArgumentError(f"unknown generation {generation!r} (expected qwen2 or qwen3)")


def _count(name: str, value: int) -> int:
    """``value`` as a non-negative int."""
    try:
        n = operator.index(value)
    except TypeError:
        n = -1
    if n < 0:
        raise KernelArgumentError(f"{name} must be a non-negative integer: {value!r}")
    return n


__all__ = [
    "FPS",
    "FPS_MAX_FRAMES",
    "FPS_MIN_FRAMES",
    "FRAME_FACTOR",
    "hf_frame_indices",
    "hf_frame_size",
    "qwen_vl_utils_frame_indices",
    "qwen_vl_utils_frame_range",
    "qwen_vl_utils_frame_size",
    "qwen_vl_utils_nframes",
    "qwen_vl_utils_sample_fps",
]
