"""The `PatchVectors` writer (Gemma 4's pre-patchified pixels): the image's patches in
row-major order, each one vector with the channels last, then rows of 0.0 up to ``pad_to``;
its compact form expands to the very same bits, and a plan past ``pad_to`` is refused."""

from __future__ import annotations

import numpy as np
import pytest

from sglang_mm_core.errors import KernelArgumentError
from sglang_mm_core.plugin import Features, Geometry, Part, PatchVectors, Plan, Repeat, Table


def _features(pad_to: int | None, dtype: str = "float32") -> Features:
    table = Table((0.5, 0.25, 0.75), (0.25, 0.5, 0.125), arithmetic="numpy", dtype=dtype)  # type: ignore[arg-type]
    return Features(table, PatchVectors(4, pad_to=pad_to), resample="pil_bicubic")


def _plan(w: int, h: int) -> Plan:
    return Plan(Repeat(7, 1), Geometry(h, w, (h // 4, w // 4)), (Part((w, h)),))


def _reference(image: np.ndarray, f: Features, pad_to: int | None) -> np.ndarray:
    """The same patches cut from the writer-free ``[h, w, 3]`` table values with numpy."""
    assert f.table is not None
    h, w, _ = image.shape
    values = np.stack([f.table.values[c][image[:, :, c]] for c in range(3)], axis=-1)
    rows, cols = h // 4, w // 4
    patches = values[: rows * 4, : cols * 4].reshape(rows, 4, cols, 4, 3)
    flat = patches.transpose(0, 2, 1, 3, 4).reshape(rows * cols, 48)
    if pad_to is None:
        return flat
    out = np.zeros((pad_to, 48), dtype=flat.dtype)
    out[: rows * cols] = flat
    return out


@pytest.mark.parametrize("pad_to", [None, 20, 50])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_patches_then_zero_rows(pad_to: int | None, dtype: str) -> None:
    f = _features(pad_to, dtype)
    image = np.random.default_rng(3).integers(0, 256, (16, 20, 3), dtype=np.uint8)
    plan = _plan(20, 16)  # no resize: 4 x 5 patches
    full = f.writer.full(f.compose(image, plan.parts), plan, f.dtype)
    want = _reference(image, f, pad_to)
    assert full.array.shape == want.shape == f.writer.shape(plan)
    np.testing.assert_array_equal(full.array, want)
    compact = f.writer.compact(f.compose(image, plan.parts, codes=True), plan, f.table)  # type: ignore[arg-type]
    expanded = compact.expand()
    assert expanded.dtype == full.dtype
    np.testing.assert_array_equal(expanded.array, full.array)


def test_more_patches_than_pad_to_is_refused() -> None:
    with pytest.raises(KernelArgumentError, match="more than pad_to = 19"):
        PatchVectors(4, pad_to=19).shape(_plan(20, 16))


@pytest.mark.parametrize("pad_to", [None, 20, 50])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_video_is_its_frames_one_after_the_other(pad_to: int | None, dtype: str) -> None:
    """Frames laid out as images are, ``[frames, pad_to, 48]``, both from the sink (frames
    put in any order, one twice) and from the compact form."""
    f = _features(pad_to, dtype)
    assert f.table is not None
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, (16, 20, 3), dtype=np.uint8) for _ in range(3)]
    plan = _plan(20, 16)
    want = np.stack([_reference(im, f, pad_to) for im in images])
    codes = [f.compose(im, plan.parts, codes=True) for im in images]
    sink = f.writer.video_sink(plan, f.table, 3)
    assert sink is not None
    for k in (2, 0, 1, 2):
        sink.put(k, codes[k])
    full = sink.finish()
    assert full.dtype == f.dtype and full.array.shape == want.shape
    np.testing.assert_array_equal(full.array, want)
    assert f.writer.video_bytes(plan, f.table, 3) == full.array.nbytes
    compact = f.writer.video(codes, plan, f.table)
    np.testing.assert_array_equal(compact.expand().array, want)


def test_a_video_sink_refuses_missing_and_stray_frames() -> None:
    f = _features(20)
    assert f.table is not None
    plan = _plan(20, 16)
    sink = f.writer.video_sink(plan, f.table, 2)
    assert sink is not None
    image = np.zeros((16, 20, 3), dtype=np.uint8)
    with pytest.raises(KernelArgumentError, match=r"outside 0\.\.1"):
        sink.put(2, f.compose(image, plan.parts, codes=True))
    sink.put(0, f.compose(image, plan.parts, codes=True))
    with pytest.raises(KernelArgumentError, match="position 1 of the video was never written"):
        sink.finish()
    with pytest.raises(KernelArgumentError, match="at least one frame"):
        f.writer.video([], plan, f.table)
    with pytest.raises(KernelArgumentError, match="at least one frame"):
        f.writer.video_sink(plan, f.table, 0)
