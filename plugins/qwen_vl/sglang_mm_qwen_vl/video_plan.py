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
from .video_sampling import (
    hf_frame_indices,
    hf_frame_size,
    qwen_vl_utils_frame_indices,
    qwen_vl_utils_frame_size,
)

#: Options only qwen-vl-utils' sampling reads.
_QVU_ONLY = ("total_pixels", "video_start", "video_end", "resized_height", "resized_width")


def plan_video(p: QwenVLParams, video: mm.VideoHeader, options: mm.VideoOptions) -> mm.VideoPlan:
    """The `VideoPlan` of ``video`` (its ``frames`` known) under ``p`` and ``options``."""
    if p.generation == "qwen3_vl":
        raise mm.UnsupportedModalityError(
            "Qwen3-VL and Qwen3.5 videos put a timestamp text before every temporal group, "
            "which needs the model's tokenizer; this release processes Qwen2-VL and Qwen2.5-VL "
            "videos only"
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
    sampled_fps = (n / total * fps) if fps is not None else 24.0  # HF's fallback rate
    seconds = tps / sampled_fps
    geometry = mm.Geometry(height, width, (t, gh, gw), seconds_per_grid_t=seconds)
    tokens = mm.Repeat(p.video_token_id, t * gh * gw // p.merge_size**2)
    aux = {"video_grid_thw": mm.Tensor(np.array([[t, gh, gw]], dtype=np.int64), "int64")}
    if p.generation == "qwen2_5_vl":
        aux["second_per_grid_ts"] = mm.Tensor(np.array([seconds], dtype=np.float32), "float32")
    plan = mm.Plan(tokens, geometry, frames=n)
    return mm.VideoPlan(plan, tuple(int(i) for i in indices), aux)


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
        nframes = o.nframes if o.nframes is not None else None
        rate = o.fps if o.fps is not None else (None if nframes is not None else p.video_fps)
        if rate is None and nframes is None:
            nframes = p.video_num_frames
        idx = hf_frame_indices(
            total,
            fps,
            generation="qwen2",
            do_sample_frames=True,
            fps=rate,
            num_frames=nframes,
            min_frames=o.min_frames if o.min_frames is not None else p.video_min_frames,
            max_frames=o.max_frames if o.max_frames is not None else p.video_max_frames,
            temporal_patch_size=p.temporal_patch_size,
        )
    size = hf_frame_size(
        h,
        w,
        len(idx),
        generation="qwen2",
        min_pixels=o.min_pixels if o.min_pixels is not None else p.video_min_pixels,
        max_pixels=o.max_pixels if o.max_pixels is not None else p.video_max_pixels,
        patch_size=p.patch_size,
        merge_size=p.merge_size,
        temporal_patch_size=p.temporal_patch_size,
        cap_pixels_per_frame=p.video_cap_pixels_per_frame,
    )
    return idx.tolist(), size


__all__ = ["plan_video"]
