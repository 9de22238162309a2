"""What one video becomes under the ``kimi`` params: transformers 5.23's
``Kimi_K25VideoProcessor`` and ``Kimi_K25Processor.replace_video_token``.

- **Sampling** (``BaseVideoProcessor.sample_frames``, ``default_sample_indices_fn``):
  ``n = max(1, int(frames / video_fps * fps))`` (``fps`` the params' ``video_fps``, 2, or the
  request's ``fps``; or the request's ``nframes``), indices ``arange(n) * frames // n``.
- **Frames**: cut into chunks of ``temporal_patch_size`` (4) frames, the last one shorter;
  every frame resized by the NaViT rule under ``video_max_patches`` (4096) and zero-padded like
  an image; ``pixel_values_videos`` is every frame's patches in turn, ``video_grid_thw`` one row
  ``[frames in the chunk, rows, cols]`` per chunk.
- **Tokens**: per chunk, its first frame's timestamp (``HH:MM:SS.mmm`` of ``index / fps``),
  ``<|media_begin|>``, ``video``, ``<|media_content|>``, one frame's worth of video tokens
  (``rows * cols / 4``: the tower merges a chunk in time), ``<|media_end|>``. The texts are
  the model's tokenizer's ids."""

from __future__ import annotations

import time

import numpy as np

from sglang_mm_core import plugin as mm

from .navit import navit_size
from .params import KimiParams

#: The word between ``<|media_begin|>`` and ``<|media_content|>`` of a video chunk.
CHUNK_WORD = "video"


def sample_indices(
    frames: int, video_fps: float, *, fps: float | None, nframes: int | None
) -> list[int]:
    """``default_sample_indices_fn``: ``nframes`` frames, or ``fps`` frames per second of a
    ``frames``-frame video at ``video_fps``, spread as ``arange(n) * frames // n``."""
    if fps is not None and nframes is not None:
        raise mm.KernelArgumentError("fps and nframes are mutually exclusive: pass only one")
    n = nframes if nframes is not None else max(1, int(frames / video_fps * (fps or 0.0)))
    if n > frames:
        raise mm.KernelArgumentError(
            f"{n} frames asked of a video of {frames} (transformers refuses more frames than "
            "the video has)"
        )
    return (np.arange(n, dtype=np.int64) * frames // n).tolist()


def timestamp_text(seconds: float) -> str:
    """``Kimi_K25Processor``'s chunk timestamp: ``HH:MM:SS`` of the whole seconds (UTC),
    then the milliseconds truncated."""
    return time.strftime("%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}"


def plan_video(
    p: KimiParams,
    video: mm.VideoHeader,
    options: mm.VideoOptions,
    tokenizer: mm.TextTokenizer | None,
) -> mm.VideoPlan:
    """The `VideoPlan` of ``video`` under ``p`` and the request's ``options``."""
    if p.resample != "aten_u8":
        raise mm.UnsupportedModalityError(
            "Kimi K2.5 videos follow transformers' Kimi_K25VideoProcessor (torchvision): set "
            "resample 'aten_u8'. The checkpoint's own video path (its media_utils.py) reads "
            "frames with mecord and samples them by linspace, which is not reproduced"
        )
    if p.video_token_id is None or tokenizer is None:
        missing = "video_token_id" if p.video_token_id is None else "tokenizer"
        raise mm.UnsupportedModalityError(
            f"Kimi K2.5 videos need the spec param {missing!r}: the id of "
            "<|kimi_k25_video_placeholder|> and the model's tokenizer.json, which tokenizes "
            "each chunk's timestamp"
        )
    given = options.set()
    for name in sorted(set(given) - {"fps", "nframes"}):
        raise mm.unsupported_option(
            name, given[name], "Kimi_K25VideoProcessor samples by fps or a frame count only"
        )
    total = video.frames
    if total is None or total <= 0:
        raise mm.DecodeError("the video states no frames", format="video")
    if video.fps <= 0:
        raise mm.DecodeError("the video states no frame rate", format="video")
    fps = options.fps if options.nframes is None else None
    if fps is None and options.nframes is None:
        fps = p.video_fps
    indices = sample_indices(total, video.fps, fps=fps, nframes=options.nframes)
    size = navit_size(
        video.width,
        video.height,
        patch_size=p.patch_size,
        merge_size=p.merge_size,
        max_patches=p.video_max_patches,
        max_size_per_side=p.max_size_per_side,
    )
    rows, cols = size.grid
    tps = p.temporal_patch_size
    n = len(indices)
    chunks = [min(tps, n - s) for s in range(0, n, tps)]
    per_chunk = rows * cols // p.merge_size**2
    word = tokenizer.ids(CHUNK_WORD)
    ids: list[int] = []
    first = last = 0
    for k, start in enumerate(range(0, n, tps)):
        ids += tokenizer.ids(timestamp_text(indices[start] / video.fps))
        ids += [p.media_begin_token_id, *word, p.media_content_token_id]
        if k == 0:
            first = len(ids)
        ids += [p.video_token_id] * per_chunk
        last = len(ids)
        ids.append(p.media_end_token_id)
    part = mm.Part(
        (size.width, size.height), pad_to=(size.pad_width, size.pad_height), fill=(0, 0, 0)
    )
    geometry = mm.Geometry(size.pad_height, size.pad_width, (len(chunks), rows, cols))
    plan = mm.Plan(mm.Explicit(tuple(ids), content=(first, last)), geometry, (part,), frames=n)
    grid = np.array([[c, rows, cols] for c in chunks], dtype=np.int64)
    aux = {
        "video_grid_thw": mm.Tensor(grid, "int64"),
        "num_chunks_per_video": mm.Tensor(np.array([len(chunks)], dtype=np.int64), "int64"),
    }
    return mm.VideoPlan(plan, tuple(indices), aux)


__all__ = ["CHUNK_WORD", "plan_video", "sample_indices", "timestamp_text"]
