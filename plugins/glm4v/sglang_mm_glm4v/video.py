"""What one video becomes under the `glm4v` params (docs/families/glm4v.md, "Video"), from its
header and the request's options alone:

- the frames: `glm4v_frame_indices` (transformers 5.23's ``Glm4vVideoProcessor.sample_frames``:
  ``fps`` frames a second, within ``max_duration``) or `glm46v_frame_indices`
  (``Glm46VVideoProcessor.sample_frames``: 3, 1 or 0.5 frames a second by the duration, at most
  640); both drop repeated indices and repeat the last one to an even count;
- their one size: the core's `temporal_smart_resize` over the frames the reference resizes
  (every sampled index under ``video_decoder: torchcodec``, each distinct one under ``pyav``);
- the expansion of ``<|video|>``: per temporal group ``<|begin_of_image|>``, its image tokens,
  ``<|end_of_image|>`` and the group's timestamp text (`timestamp_texts`), tokenized with the
  model's tokenizer.

The duration is the reference's ``VideoMetadata.duration``: ``frames / fps`` (transformers'
PyAV reader divides by the stream's rational rate exactly, this by its double, which can differ
in the last bit) or, for a container that gives none, ``round((frames - 1) / fps) + 1``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .params import Glm4vParams

#: Glm46VVideoProcessor's duration thresholds (seconds) and their frame rates.
_GLM46V_RATES = ((30, 3.0), (300, 1.0))
_GLM46V_LONG_RATE = 0.5
_GLM46V_MAX_FRAMES = 640
_GLM46V_MAX_DURATION = 2400


def video_duration(total_frames: int, fps: float) -> float:
    """``VideoMetadata.duration`` as transformers' readers set it (``frames / fps``), or where
    that is 0 the samplers' own ``round((frames - 1) / fps) + 1``."""
    duration = total_frames / fps
    return duration or round((total_frames - 1) / fps) + 1


def glm4v_frame_indices(
    total_frames: int, fps: float, *, requested_fps: float, max_duration: int
) -> list[int]:
    """``Glm4vVideoProcessor.sample_frames`` of a ``total_frames`` video at ``fps``: within
    ``max_duration`` seconds, ``max(floor(duration * requested_fps), 1)`` frames at
    ``ceil(i * fps / requested_fps)``; past it, ``int(max_duration * requested_fps)`` frames
    spread over the duration (every frame when that many or fewer)."""
    _check_rate(total_frames, fps)
    last = total_frames - 1
    duration = video_duration(total_frames, fps)
    if duration <= max_duration:
        n = max(math.floor(duration * requested_fps), 1)
        indices = [min(last, math.ceil(i * fps / requested_fps)) for i in range(n)]
    else:
        samples = int(max_duration * requested_fps)
        if samples >= total_frames:
            indices = list(range(total_frames))
        else:
            seconds = np.linspace(0, duration, samples, endpoint=True)
            indices = [min(last, math.ceil(t * fps)) for t in seconds]
    return _unique_even(indices)


def glm46v_frame_indices(total_frames: int, fps: float, *, temporal_patch_size: int) -> list[int]:
    """``Glm46VVideoProcessor.sample_frames`` of a ``total_frames`` video at ``fps``: a target
    rate of 3, 1 or 0.5 frames a second for videos of at most 30 s, 300 s or longer (counted up
    to 2400 s), ``int(duration * rate * temporal_patch_size)`` frames (at most 640), taken at
    the first frame of each ``1 / (temporal_patch_size * rate)`` seconds, spread evenly instead
    where that gives another count."""
    _check_rate(total_frames, fps)
    duration = video_duration(total_frames, fps)
    effective = min(duration, _GLM46V_MAX_DURATION)
    rate = next((r for limit, r in _GLM46V_RATES if effective <= limit), _GLM46V_LONG_RATE)
    extract = min(int(effective * rate * temporal_patch_size), _GLM46V_MAX_FRAMES)
    per_frame = 1 / fps
    max_second = int(duration)
    indices: list[int]
    if total_frames < extract:
        indices = np.linspace(0, total_frames - 1, extract, dtype=int).tolist()
    else:
        indices = []
        current = 0.0
        step = 1 / (temporal_patch_size * rate)
        for i in range(total_frames):
            if i * per_frame >= current:
                current += step
                indices.append(i)
                if current >= max_second:
                    break
    if len(indices) < extract:
        start, end = (indices[0], indices[-1]) if indices else (0, max(total_frames - 1, 0))
        indices = np.linspace(start, end, extract, dtype=int).tolist()
    elif len(indices) > extract:
        indices = np.linspace(0, total_frames - 1, extract, dtype=int).tolist()
    return _unique_even(indices)


def _check_rate(total_frames: int, fps: float) -> None:
    if total_frames <= 0:
        raise mm.DecodeError("the video states no frames", format="video")
    if not fps > 0 or not math.isfinite(fps):
        raise mm.KernelArgumentError(
            f"the video states no frame rate ({fps!r}): GLM's samplers need one"
        )


def _unique_even(indices: Sequence[int]) -> list[int]:
    """The samplers' tail: repeated indices dropped (first kept), then the last one repeated
    once when the count is odd."""
    seen: set[int] = set()
    out: list[int] = []
    for i in indices:
        if i not in seen:
            seen.add(i)
            out.append(int(i))
    if len(out) & 1:
        out.append(out[-1])
    return out


def timestamp_texts(indices: Sequence[int], fps: float, groups: int, style: str) -> list[str]:
    """The text after each temporal group (``Glm4vProcessor`` / ``Glm46VProcessor``
    ``.replace_video_token``): the timestamps ``index / fps`` of every other sampled frame (the
    processors step by 2 whatever the temporal patch), the first ``groups`` of them (the last
    repeated, or 0, when fewer), written ``int(t)`` (``glm4v``) or ``f"{t:.1f} seconds"``
    (``glm46v``)."""
    times = [i / fps for i in indices][::2][:groups]
    while len(times) < groups:
        times.append(times[-1] if times else 0)
    if style == "glm46v":
        return [f"{t:.1f} seconds" for t in times]
    return [str(int(t)) for t in times]


def frame_tokens(
    p: Glm4vParams, texts: Sequence[str], per_group: int, tokenizer: mm.TextTokenizer
) -> mm.Explicit:
    """What ``<|video|>`` becomes: per temporal group ``<|begin_of_image|>``, ``per_group``
    image tokens, ``<|end_of_image|>`` and its timestamp's ids (each tokenized on its own:
    special tokens bound it on both sides in the prompt, so the whole prompt's tokenization
    splits there too). The item's offsets run from the first image token to the last."""
    block = [p.image_start_token_id, *([p.image_token_id] * per_group), p.image_end_token_id]
    ids: list[int] = []
    last_end = 0
    for text in texts:
        ids.extend(block)
        last_end = len(ids) - 1
        ids.extend(tokenizer.ids(text))
    return mm.Explicit(tuple(ids), content=(1, last_end))


def plan_video(
    p: Glm4vParams,
    video: mm.VideoHeader,
    options: mm.VideoOptions,
    tokenizer: mm.TextTokenizer | None,
) -> mm.VideoPlan:
    """The `VideoPlan` of ``video`` under ``p`` and the request's ``options`` (``fps`` for
    glm4v sampling, ``min_pixels`` / ``max_pixels`` for the resize; others are refused)."""
    if tokenizer is None:
        raise mm.UnsupportedModalityError(
            "GLM-4.xV videos put a timestamp text after every frame, tokenized by the model's "
            "tokenizer: set the spec param 'tokenizer' to the model's tokenizer.json "
            "(spec_from_hf sets it from a model directory that has one)"
        )
    given = options.set()
    for name, value in given.items():
        if name in ("min_pixels", "max_pixels"):
            continue
        if name == "fps" and p.video_sampling == "glm4v":
            continue
        why = (
            "Glm46VVideoProcessor.sample_frames ignores a requested fps: it picks its rate "
            "from the duration"
            if name == "fps"
            else "GLM's video processors do not read it"
        )
        raise mm.unsupported_option(name, value, why)
    total = video.frames or 0
    fps = video.fps
    indices = sample(p, total, fps, options.fps)
    counted = len(indices) if p.video_decoder == "torchcodec" else len(set(indices))
    low = options.min_pixels if options.min_pixels is not None else p.video_min_pixels
    high = options.max_pixels if options.max_pixels is not None else p.video_max_pixels
    height, width = mm.temporal_smart_resize(
        counted,
        video.height,
        video.width,
        temporal_factor=p.temporal_patch_size,
        factor=p.factor,
        min_pixels=low,
        max_pixels=high,
    )
    tps = p.temporal_patch_size
    frames = indices if p.video_decoder == "torchcodec" else sorted(set(indices))
    t = -(-len(frames) // tps)
    gh, gw = height // p.patch_size, width // p.patch_size
    per_group = gh * gw // p.merge_size**2
    texts = timestamp_texts(indices, fps, t, p.timestamps)
    tokens = frame_tokens(p, texts, per_group, tokenizer)
    geometry = mm.Geometry(height, width, (t, gh, gw))
    grid: npt.NDArray[np.int64] = np.array([[t, gh, gw]], dtype=np.int64)
    plan = mm.Plan(tokens, geometry, frames=len(frames))
    return mm.VideoPlan(plan, tuple(frames), {"video_grid_thw": mm.Tensor(grid, "int64")})


def sample(p: Glm4vParams, total: int, fps: float, requested_fps: float | None) -> list[int]:
    """The sampled frame indices by the params' ``video_sampling``."""
    if p.video_sampling == "glm46v":
        return glm46v_frame_indices(total, fps, temporal_patch_size=p.temporal_patch_size)
    rate = p.video_fps if requested_fps is None else requested_fps
    return glm4v_frame_indices(total, fps, requested_fps=rate, max_duration=p.video_max_duration)


__all__ = [
    "frame_tokens",
    "glm4v_frame_indices",
    "glm46v_frame_indices",
    "plan_video",
    "sample",
    "timestamp_texts",
    "video_duration",
]
