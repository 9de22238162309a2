"""`PatchRows.video_sink`, the full video feature written frame by frame, against
`PatchRows.video` expanded (the compact layout, itself checked against HF's
``pixel_values_videos`` by the qwen_vl goldens): the same bits for float32 and bfloat16
tables, odd frame counts (the last frame repeated), a frame at several positions and frames
put out of order; a position outside the clip and a frame never put are refused."""

from __future__ import annotations

import numpy as np
import pytest

from sglang_mm_core.errors import KernelArgumentError
from sglang_mm_core.plugin import ChwPatches, Geometry, PatchRows, Plan, Repeat, Table

MEAN, STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)


def _setup(dtype: str, frames: int) -> tuple[PatchRows, Plan, Table, list[np.ndarray]]:
    writer = PatchRows(patch_size=2, merge_size=2, temporal_patch_size=2)
    plan = Plan(Repeat(9, 6), Geometry(8, 12, (-(-frames // 2), 4, 6)), frames=frames)
    table = Table(MEAN, STD, arithmetic="torchvision", dtype=dtype)  # type: ignore[arg-type]
    rows, _ = writer.shape(plan)
    rng = np.random.default_rng(frames)
    codes = [rng.integers(0, 256, rows * 3 * 4, dtype=np.uint8) for _ in range(frames)]
    return writer, plan, table, codes


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("frames", [1, 2, 5, 6])
def test_sink_equals_the_compact_layout_expanded(dtype: str, frames: int) -> None:
    writer, plan, table, codes = _setup(dtype, frames)
    want = writer.video(codes, plan, table).expand()
    sink = writer.video_sink(plan, table, frames)
    for k in reversed(range(frames)):  # any order
        sink.put(k, codes[k])
    got = sink.finish()
    assert got.dtype == want.dtype == dtype
    assert got.array.shape == want.array.shape
    np.testing.assert_array_equal(got.array, want.array)


def test_one_frame_at_several_positions() -> None:
    writer, plan, table, codes = _setup("float32", 4)
    codes[2] = codes[1]  # a sampled index twice: the same codes at two positions
    sink = writer.video_sink(plan, table, 4)
    for k in (0, 1, 2, 3):
        sink.put(k, codes[k])
    np.testing.assert_array_equal(
        sink.finish().array, writer.video(codes, plan, table).expand().array
    )


def test_positions_outside_or_missing_are_refused() -> None:
    writer, plan, table, codes = _setup("float32", 3)
    sink = writer.video_sink(plan, table, 3)
    with pytest.raises(KernelArgumentError, match=r"outside 0\.\.2"):
        sink.put(3, codes[0])
    sink.put(0, codes[0])
    sink.put(2, codes[2])
    with pytest.raises(KernelArgumentError, match="position 1 of the video was never written"):
        sink.finish()
    with pytest.raises(KernelArgumentError):
        writer.video_sink(plan, table, 0)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("frames", [1, 3, 4])
def test_chw_patches_video_is_each_frame_in_turn(dtype: str, frames: int) -> None:
    """`ChwPatches` lays a video out as its frames' patches one frame after the other (Kimi
    K2.5's ``pixel_values_videos``): each frame's slice is that frame's image feature; the
    sink gives the compact layout's bits, and `video_bytes` its size."""
    writer = ChwPatches(patch_size=2)
    plan = Plan(Repeat(9, 6), Geometry(8, 12, (frames, 4, 6)), frames=frames)
    table = Table(MEAN, STD, arithmetic="numpy", dtype=dtype)  # type: ignore[arg-type]
    rows = writer.shape(plan)[0]
    rng = np.random.default_rng(frames)
    codes = [rng.integers(0, 256, rows * 3 * 4, dtype=np.uint8) for _ in range(frames)]
    video = writer.video(codes, plan, table).expand()
    assert video.dtype == dtype and video.array.shape == (frames * rows, 3, 2, 2)
    for k in range(frames):
        one = writer.compact(codes[k], plan, table).expand().array
        np.testing.assert_array_equal(video.array[k * rows : (k + 1) * rows], one)
    sink = writer.video_sink(plan, table, frames)
    for k in reversed(range(frames)):
        sink.put(k, codes[k])
    got = sink.finish()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.array, video.array)
    assert writer.video_bytes(plan, table, frames) == video.array.nbytes
    with pytest.raises(KernelArgumentError, match="at least one frame"):
        writer.video([], plan, table)
