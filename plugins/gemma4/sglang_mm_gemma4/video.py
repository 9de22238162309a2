"""What one Gemma 4 video becomes, from its header and the request's options alone: transformers
5.23's ``Gemma4VideoProcessor`` (its frame sampling, each frame resized to the patch budget of
``video_max_soft_tokens``) and ``Gemma4Processor.replace_video_token`` (the prompt text).

- `sample_indices` is ``default_sample_indices_fn``: ``arange(n) * total // n`` for the
  ``num_frames`` asked for (32), every frame without sampling; more frames than the video has
  is the reference's error;
- `timestamp_text` is the processor's ``"mm:ss"`` of ``index / fps`` (an unknown rate counts as
  24, as the processor assumes);
- `video_tokens`: per sampled frame its timestamp, ``<boi>``, ``<|video|>`` x the frame's soft
  tokens, ``<eoi>``, the frames joined by a space. The text goes through the model's own
  tokenizer; each piece is tokenized on its own, which equals the processor's tokenization of
  the whole prompt wherever special tokens bound it (``<eoi>`` and ``<boi>`` around every
  timestamp but the first, which follows the prompt's own text)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .geometry import position_ids
from .params import Gemma4Params

#: The processor's rate for a video whose metadata has none.
FALLBACK_FPS = 24.0
#: The per-video options Gemma 4 reads; its processor has no use for the others.
_READ = frozenset({"nframes"})


def sample_indices(total: int, num_frames: int | None) -> npt.NDArray[np.int64]:
    """The frames ``Gemma4VideoProcessor`` decodes from a ``total``-frame video: ``num_frames``
    of them spread evenly (None: every frame). Asking for more than the video has is the
    reference's ``ValueError``, a `KernelArgumentError` here."""
    if num_frames is None:
        return np.arange(total, dtype=np.int64)
    if num_frames > total:
        raise mm.KernelArgumentError(
            f"the video has {total} frames, fewer than the {num_frames} Gemma 4 samples "
            f"(num_frames): ask for fewer with the video option nframes"
        )
    return np.arange(num_frames, dtype=np.int64) * total // num_frames


def timestamp_text(seconds: float) -> str:
    """``"mm:ss"`` of a frame's time, as ``Gemma4Processor.replace_video_token`` writes it."""
    return f"{int(seconds // 60):02d}:{int(seconds % 60):02d}"


def video_tokens(
    p: Gemma4Params, seconds: list[float], per_frame: int, tokenizer: mm.TextTokenizer
) -> mm.Explicit:
    """What a video's ``<|video|>`` becomes: ``"mm:ss "`` then ``<boi>``, ``per_frame`` video
    tokens and ``<eoi>`` per frame, the frames joined by ``" "``. The item's offsets run from
    the first video token to the last (the timestamps and markers between frames inside)."""
    block = [p.boi_token_id, *([p.video_token_id] * per_frame), p.eoi_token_id]
    ids: list[int] = []
    first = 0
    for k, s in enumerate(seconds):
        ids.extend(tokenizer.ids(("" if k == 0 else " ") + timestamp_text(s) + " "))
        if k == 0:
            first = len(ids) + 1
        ids.extend(block)
    return mm.Explicit(tuple(ids), content=(first, len(ids) - 1))


def plan_video(
    p: Gemma4Params,
    header: mm.VideoHeader,
    options: mm.VideoOptions,
    tokenizer: mm.TextTokenizer | None,
    frame_size: tuple[int, int],
) -> mm.VideoPlan:
    """The `VideoPlan` of a video under ``p`` and its options: the sampled frames, each resized
    to ``frame_size`` ``(height, width)`` (the patch budget's size for the header's), the
    timestamped tokens and the aux tensors ``video_position_ids``, ``num_frames_per_video``
    and ``num_soft_tokens_per_video``."""
    if tokenizer is None:
        raise mm.UnsupportedModalityError(
            "Gemma 4 videos put an mm:ss timestamp before every frame, tokenized by the model's "
            "tokenizer: set the spec param 'tokenizer' to the model's tokenizer.json "
            "(spec_from_hf sets it from a model directory that has one)"
        )
    for name, value in options.set().items():
        if name not in _READ:
            raise mm.unsupported_option(name, value, "Gemma4VideoProcessor does not read it")
    if options.nframes is not None and not p.video_do_sample_frames:
        raise mm.unsupported_option(
            "nframes", options.nframes, "the spec keeps every frame (video_do_sample_frames)"
        )
    total = header.frames
    if total is None or total <= 0:
        raise mm.DecodeError("the video states no frames", format="video")
    asked = options.nframes if options.nframes is not None else p.video_num_frames
    indices = sample_indices(total, asked if p.video_do_sample_frames else None)
    fps = header.fps if header.fps > 0 else FALLBACK_FPS
    seconds = [int(i) / fps for i in indices]
    height, width = frame_size
    k = p.pooling_kernel_size
    rows, cols = height // p.patch_size, width // p.patch_size
    per_frame = rows * cols // k**2
    n = len(indices)
    positions = position_ids(rows, cols, p.video_max_patches)[None]
    aux = {
        "video_position_ids": mm.Tensor(np.ascontiguousarray(np.repeat(positions, n, 0)), "int64"),
        "num_frames_per_video": mm.Tensor(np.array([n], dtype=np.int64), "int64"),
        "num_soft_tokens_per_video": mm.Tensor(np.array([per_frame], dtype=np.int64), "int64"),
    }
    tokens = video_tokens(p, seconds, per_frame, tokenizer)
    plan = mm.Plan(tokens, mm.Geometry(height, width, (rows // k, cols // k)), frames=n)
    return mm.VideoPlan(plan, tuple(int(i) for i in indices), aux)


__all__ = ["FALLBACK_FPS", "plan_video", "sample_indices", "timestamp_text", "video_tokens"]
