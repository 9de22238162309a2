"""The template's tests: the conformance suite, and bit-exact parity with its reference
(Pillow's bicubic resize, then the float32 normalize a CLIP image processor does)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from PIL import Image
from sglang_mm_square import Square, SquareParams

import sglang_mm_core as mm
from sglang_mm_core.conformance import parametrize_with_checks


@parametrize_with_checks(Square)
def test_conformance(target, check):  # type: ignore[no-untyped-def]
    check(target)


def reference(data: bytes, p: SquareParams) -> np.ndarray:
    """What the model was trained with, written from the description, not from our kernel."""
    rgb = Image.open(io.BytesIO(data)).convert("RGB").resize((p.size, p.size), Image.BICUBIC)
    x = np.asarray(rgb, dtype=np.float32) * np.float32(1 / 255)
    x = (x - np.asarray(p.image_mean, np.float32)) / np.asarray(p.image_std, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def encode(pixels: np.ndarray, fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
@pytest.mark.parametrize(("w", "h"), [(1, 1), (17, 300), (640, 480), (1000, 3)])
def test_pixels_match_the_reference(fmt: str, w: int, h: int) -> None:
    rng = np.random.default_rng(w * 1000 + h)
    data = encode(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), fmt)
    params = {"size": 224, "patch_size": 14, "image_token_id": 9}
    with mm.pipeline_from_spec({"family": "square", "params": params}) as pipe:
        out = pipe.process(mm.MmInput(input_ids=[1, 9, 2], images=[data]))
    assert_array_equal(out.items[0].feature.array, reference(data, SquareParams(**params)))
    assert out.input_ids.tolist() == [1] + [9] * 256 + [2]
    assert out.offsets == [(1, 256)]


def test_params_are_checked_when_the_spec_loads() -> None:
    with pytest.raises(mm.SpecError, match="multiple of patch_size"):
        mm.pipeline_from_spec({"family": "square", "params": {"size": 300, "patch_size": 14}})
