"""``pixel_values_videos`` of a clip's frames: HuggingFace's Qwen2-VL / Qwen3-VL video layout
``[t * gh * gw, 3 * tps * ps * ps]``, rows grouped by temporal patch, each row's columns
channel-major, then frame within the group, then the patch's pixels (``patchify`` of
``Qwen2VLVideoProcessor``). A frame count that is not a multiple of ``tps`` repeats the last
frame, as HF does.

Every frame is resized and coded by the family's own fused kernel (the compact form's uint8
samples, one frame at a time), so the frames themselves are never held at full size; the
groups are then expanded through the family's table, which holds the reference's arithmetic
for every sample value. A first composition of the core's kernels (#23): the fused,
streaming video writer is later work."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .family import QwenVLFamily


def video_pixel_values(
    frames: Iterable[npt.NDArray[np.uint8]],
    size: tuple[int, int],
    family: QwenVLFamily,
    *,
    threads: int = 1,
) -> tuple[npt.NDArray[np.float32], tuple[int, int, int]]:
    """``(pixel_values_videos, (t, gh, gw))`` of RGB uint8 ``[h, w, 3]`` frames, each resized
    to ``size`` ``(height, width)`` (one size per video: ``video_sampling.hf_frame_size``)
    with the family's video resampler and normalized with its table (`video_features`)."""
    p = family.params
    height, width = size
    ps, tps = p.patch_size, p.temporal_patch_size
    unit = ps * p.merge_size
    if height <= 0 or width <= 0 or height % unit or width % unit:
        raise mm.KernelArgumentError(
            f"video frame size {width}x{height} is not a positive multiple of {unit} per side"
        )
    features = family.video_features()
    table = features.table
    assert table is not None
    gh, gw = height // ps, width // ps
    rows, pp = gh * gw, ps * ps
    part = [mm.Part((width, height))]
    coded: list[npt.NDArray[np.uint8]] = []
    for frame in frames:
        codes = features.compose(mm.as_rgb(frame), part, codes=True, threads=threads)
        coded.append(codes.reshape(rows, 3, pp))
    if not coded:
        raise mm.KernelArgumentError("a video needs at least one frame")
    coded += [coded[-1]] * (-len(coded) % tps)
    groups = len(coded) // tps
    # One gather per group from the [3 * 256] table: channel c's sample v is entry 256 c + v.
    lut = np.ascontiguousarray(table.values, dtype=np.float32).reshape(-1)
    offset = (np.arange(3, dtype=np.uint16) * 256)[None, :, None, None]
    out = np.empty((groups, rows, 3, tps, pp), dtype=np.float32)
    for g in range(groups):
        group = np.stack(coded[g * tps : (g + 1) * tps], axis=2)  # [rows, 3, tps, pp]
        np.take(lut, group + offset, out=out[g])
    return out.reshape(groups * rows, 3 * tps * pp), (groups, gh, gw)


__all__ = ["video_pixel_values"]
