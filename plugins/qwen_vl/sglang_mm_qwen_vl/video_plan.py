"""What one video becomes under the `qwen_vl` params, from its header and the request's
options: the frames sampled (`video_sampling`), the one size they are resized to, the grid,
its tokens and ``video_grid_thw`` / ``second_per_grid_ts`` (docs/families/qwen_vl.md,
"Video").

- ``hf``: transformers' ``Qwen2VLVideoProcessor`` with ``do_sample_frames=True``: the
  params' ``video_fps`` (or ``video_num_frames``), ``video_min_frames``, ``video_max_frames``;
  a video's ``fps`` / ``nframes`` / ``min_frames`` / ``max_frames`` / ``min_pixels`` /
  ``max_pixels`` options override them, as the processor's per-call keywords do;
- ``qwen_vl_utils``: qwen-vl-utils' ``fetch_video`` (its exact-frame readers), every option of
  its message elements honoured under its own defaults;
- ``none``: every frame (transformers' ``do_sample_frames=False``).

``second_per_grid_t`` is ``temporal_patch_size / sampled_fps`` with ``sampled_fps = n /
total * fps`` as transformers' ``VideoMetadata.sampled_fps`` (and qwen-vl-utils'
``sample_fps``) computes it."""

from __future__ import annotations

import numpy as np

from sglang_mm_core import plugin as mm

from .params import QwenVLParams
from .timestamps import FALLBACK_FPS, timestamp_seconds, timestamp_text
from .video_sampling import (
    Generation,
    hf_frame_indices,
    hf_frame_size,
    qwen_vl_utils_frame_indices,
    qwen_vl_utils_frame_size,
)

#: Options only qwen-vl-utils' sampling reads.
_QVU_ONLY = ("total_pixels", "video_start", "video_end", "resized_height", "resized_width")


def plan_video(
    p: QwenVLParams,
    video: mm.VideoHeader,
    options: mm.VideoOptions,
    tokenizer: mm.TextTokenizer | None = None,
) -> mm.VideoPlan:
    """The `VideoPlan` of ``video`` (its ``frames`` known) under ``p`` and ``options``;
    ``tokenizer`` tokenizes Qwen3-VL's timestamps (required for ``generation`` qwen3_vl)."""
    qwen3 = p.generation == "qwen3_vl"
    if qwen3 and tokenizer is None:
        raise mm.UnsupportedModalityError(
            "Qwen3-VL and Qwen3.5 videos put a timestamp text before every temporal group, "
            "tokenized by the model's tokenizer: set the spec param 'tokenizer' to the model's "
            "tokenizer.json (spec_from_hf sets it from a model directory that has one)"
        )
    total = video.frames
    if total is None or total <= 0:
        raise mm.DecodeError("the video states no frames", format="video")
    fps = video.fps if video.fps > 0 else None
    indices, size = _sample(p, video, total, fps, options)
    n = len(indices)
    height, width = size
    ps, tps = p.patch_size, p.temporal_patch_size
    t = -(-n // tps)
    gh, gw = height // ps, width // ps
    sampled_fps = (n / total * fps) if fps is not None else FALLBACK_FPS
    seconds = tps / sampled_fps
    geometry = mm.Geometry(height, width, (t, gh, gw), seconds_per_grid_t=seconds)
    per_group = gh * gw // p.merge_size**2
    tokens: mm.Pattern
    if qwen3:
        assert tokenizer is not None
        tokens = timestamped_tokens(p, timestamp_seconds(indices, fps, tps), per_group, tokenizer)
    else:
        tokens = mm.Repeat(p.video_token_id, t * per_group)
    aux = {"video_grid_thw": mm.Tensor(np.array([[t, gh, gw]], dtype=np.int64), "int64")}
    if p.generation == "qwen2_5_vl":
        aux["second_per_grid_ts"] = mm.Tensor(np.array([seconds], dtype=np.float32), "float32")
    plan = mm.Plan(tokens, geometry, frames=n)
    return mm.VideoPlan(plan, tuple(int(i) for i in indices), aux)


def timestamped_tokens(
    p: QwenVLParams, seconds: list[float], per_group: int, tokenizer: mm.TextTokenizer
) -> mm.Explicit:
    """What a Qwen3-VL video's ``<|video_pad|>`` becomes (transformers 5.23's
    ``Qwen3VLProcessor.replace_video_token``): per temporal group its timestamp's ids, then
    ``vision_start``, ``per_group`` video tokens and ``vision_end``. With ``video_markers``
    "keep" the prompt's own ``vision_start`` and ``vision_end`` stay around it, as
    transformers >= 5.10 keeps them; with "replace" it replaces them too, as transformers
    < 5.10 replaced the whole ``<|vision_start|><|video_pad|><|vision_end|>``. The item's
    offsets run from the first video token to the last (the timestamps and markers between
    the groups inside them)."""
    vs, ve, vt = p.vision_start_token_id, p.vision_end_token_id, p.video_token_id
    block = [vs, *([vt] * per_group), ve]
    ids: list[int] = []
    first = 0
    for k, s in enumerate(seconds):
        ids.extend(tokenizer.ids(timestamp_text(s)))
        if k == 0:
            first = len(ids) + 1
        ids.extend(block)
    return mm.Explicit(
        tuple(ids), content=(first, len(ids) - 1), replaces_markers=p.video_markers == "replace"
    )


def _sample(
    p: QwenVLParams,
    video: mm.VideoHeader,
    total: int,
    fps: float | None,
    o: mm.VideoOptions,
) -> tuple[list[int], tuple[int, int]]:
    """The frame indices and ``(height, width)`` of the params' sampling reference."""
    h, w = video.height, video.width
    mode = p.video_sampling
    gen: Generation = "qwen3" if p.generation == "qwen3_vl" else "qwen2"
    if mode == "qwen_vl_utils":
        if fps is None:
            raise mm.KernelArgumentError("qwen-vl-utils sampling needs the video's frame rate")
        idx = qwen_vl_utils_frame_indices(
            total,
            fps,
            reader="torchcodec",
            fps=o.fps,
            nframes=o.nframes,
            min_frames=o.min_frames,
            max_frames=o.max_frames,
            video_start=o.video_start,
            video_end=o.video_end,
        )
        size = qwen_vl_utils_frame_size(
            h,
            w,
            len(idx),
            image_patch_size=p.patch_size,
            min_pixels=o.min_pixels,
            max_pixels=o.max_pixels,
            total_pixels=o.total_pixels,
            resized_height=o.resized_height,
            resized_width=o.resized_width,
        )
        if gen == "qwen3":
            # Qwen3VLVideoProcessor resizes qwen-vl-utils' frames again: its smart_resize
            # bounds the whole clip by the video params (no-op within them).
            size = _hf_size(p, *size, len(idx), gen, None, None)
        return idx.tolist(), size
    given = o.set()
    for name in _QVU_ONLY:
        if name in given:
            raise mm.unsupported_option(
                name, given[name], "only video_sampling 'qwen_vl_utils' reads it"
            )
    if mode == "none":
        for name in ("fps", "nframes", "min_frames", "max_frames"):
            if name in given:
                raise mm.unsupported_option(
                    name, given[name], "video_sampling 'none' keeps every frame"
                )
        idx = np.arange(total, dtype=np.int64)
    else:
        if gen == "qwen3":
            for name in ("min_frames", "max_frames"):
                if name in given:
                    raise mm.unsupported_option(
                        name,
                        given[name],
                        "transformers' Qwen3VLVideoProcessor ignores a per-call "
                        f"{name}; set the video_{name} param",
                    )
        # A video's fps or nframes overrides the params' (either one, as sample_frames takes).
        nframes = o.nframes
        rate = o.fps if o.fps is not None else (None if nframes is not None else p.video_fps)
        if rate is None and nframes is None:
            nframes = p.video_num_frames
        if gen == "qwen3" and rate is None and nframes is None:
            # a Qwen3 processor whose fps is None: every frame, within the frame bounds
            nframes = min(max(total, p.video_min_frames), p.video_max_frames)
        idx = hf_frame_indices(
            total,
            fps,
            generation=gen,
            do_sample_frames=True,
            fps=rate,
            num_frames=nframes,
            min_frames=o.min_frames if o.min_frames is not None else p.video_min_frames,
            max_frames=o.max_frames if o.max_frames is not None else p.video_max_frames,
            temporal_patch_size=p.temporal_patch_size,
        )
    size = _hf_size(p, h, w, len(idx), gen, o.min_pixels, o.max_pixels)
    return idx.tolist(), size


def _hf_size(
    p: QwenVLParams,
    h: int,
    w: int,
    n: int,
    gen: Generation,
    min_pixels: int | None,
    max_pixels: int | None,
) -> tuple[int, int]:
    """transformers' video resize of ``n`` frames of ``h x w`` (a video's ``min_pixels`` /
    ``max_pixels`` options over the params)."""
    return hf_frame_size(
        h,
        w,
        n,
        generation=gen,
        min_pixels=min_pixels if min_pixels is not None else p.video_min_pixels,
        max_pixels=max_pixels if max_pixels is not None else p.video_max_pixels,
        patch_size=p.patch_size,
        merge_size=p.merge_size,
        temporal_patch_size=p.temporal_patch_size,
        cap_pixels_per_frame=p.video_cap_pixels_per_frame,
    )


__all__ = ["plan_video", "timestamped_tokens"]
