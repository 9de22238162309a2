"""`sglang_mm_core.common`: the kernels' Python signatures, checked against the references
(Pillow for decode and resize, the blake3 package for the hash, the stdlib for base64)."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import blake3
import numpy as np
import pytest
from PIL import Image

from sglang_mm_core import common
from sglang_mm_core.errors import DecodeError, LimitError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "images"


@pytest.mark.parametrize("name", ["astronaut.jpg", "chelsea.png", "coffee.webp"])
def test_decode_and_probe_match_pillow(name: str) -> None:
    data = (EXAMPLES / name).read_bytes()
    ref = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    np.testing.assert_array_equal(common.image_decode_rgb(data), ref)
    assert common.image_dimensions(data) == (ref.shape[1], ref.shape[0])


def test_decode_keywords_and_limits() -> None:
    data = (EXAMPLES / "logo_rgba.png").read_bytes()
    drop = common.image_decode_rgb(data, alpha="drop")
    np.testing.assert_array_equal(drop, np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
    with pytest.raises(LimitError, match=r"250x250 = 62500 pixels exceeds the limit of 100"):
        common.image_decode_rgb(data, max_pixels=100)
    with pytest.raises(DecodeError, match="cannot decode PNG image: truncated"):
        common.image_decode_rgb(b"\x89PNG\r\n\x1a\n")


def test_resize_matches_pillow_lanczos() -> None:
    data = (EXAMPLES / "chelsea.png").read_bytes()
    img = Image.open(io.BytesIO(data)).convert("RGB")
    ref = np.asarray(img.resize((200, 133), Image.Resampling.LANCZOS))
    got = common.resize_rgb(np.asarray(img), 200, 133, "pil_lanczos", threads=2)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize(
    ("args", "want"),
    [
        ((80, 60, 0.5), (40, 30)),
        ((3, 1, 0.1), (1, 1)),
        ((80, 60, 2.0), (160, 120)),
        ((80, 60, 2.0, 120), (120, 90)),
        ((80, 60, 0.9, 40), (72, 54)),
    ],
)
def test_scaled_dims_vectors(args: tuple, want: tuple[int, int]) -> None:
    assert common.scaled_dims(*args) == want


def test_hash_base64_fetch(tmp_path: Path) -> None:
    data = (EXAMPLES / "coffee.webp").read_bytes()
    assert common.content_hash(data) == int.from_bytes(blake3.blake3(data).digest()[:8], "big")
    b64 = base64.b64encode(data).decode()
    assert common.base64_decode(b64) == data
    path = tmp_path / "c.webp"
    path.write_bytes(data)
    assert common.fetch_bytes(str(path)) == data
    assert common.fetch_bytes(b64) == data
