"""`resample: "pil"` against HF's `Gemma4ImageProcessorPil`, bit for bit: the same decoded
image into both, `pixel_values` compared as float32 bits (the compact form too), the position
ids and soft-token counts exactly; every token budget, the patch-budget edge cases (a side
that floors to nothing, the longest-side cap, sizes already on the grid) and decoded bytes."""

from __future__ import annotations

import io

import numpy as np
import pytest
import skimage.data
from _gemma4_refs import as_bits, hf_pil, noise
from PIL import Image
from sglang_mm_gemma4 import SUPPORTED_SOFT_TOKENS, Gemma4Family, Gemma4Params

import sglang_mm_core as mm
from sglang_mm_core.conformance import process_item_and_compact


def _assert_same(image: Image.Image, threads: int = 1, **params: object) -> int:
    hf_kw = {k: v for k, v in params.items() if k != "resample"}
    want = hf_pil(**hf_kw)(images=[image], return_tensors="np")
    fam = Gemma4Family(Gemma4Params(**params))  # type: ignore[arg-type]
    item = process_item_and_compact(fam, np.asarray(image.convert("RGB")), threads=threads)
    got = item.feature.array
    assert got.shape == want["pixel_values"][0].shape and got.dtype == np.float32
    np.testing.assert_array_equal(as_bits(got), as_bits(want["pixel_values"][0]))
    np.testing.assert_array_equal(
        item.aux["image_position_ids"].array, want["image_position_ids"][0]
    )
    n = item.aux["num_soft_tokens_per_image"].array
    np.testing.assert_array_equal(n, want["num_soft_tokens_per_image"])
    return int(n[0])


PHOTOS = ["astronaut", "chelsea", "coffee", "rocket"]


@pytest.mark.parametrize("name", PHOTOS)
def test_photos(name: str) -> None:
    img = Image.fromarray(np.ascontiguousarray(getattr(skimage.data, name)()[:, :, :3]))
    _assert_same(img)


@pytest.mark.parametrize("tokens", SUPPORTED_SOFT_TOKENS)
def test_every_token_budget(tokens: int) -> None:
    assert _assert_same(noise(640, 427, seed=tokens), max_soft_tokens=tokens) <= tokens


# Sizes around the edge cases of the patch-budget rule: a side that floors to 0 (taking one
# multiple of 48, the other the aspect ratio's floor, up to the longest side of 13440), sizes
# already on the grid at the budget (no resize), tiny and huge.
EDGE = [(1, 1), (3, 2000), (2000, 3), (17, 3000), (1, 20000), (20000, 1), (48, 48)]
EDGE += [(864, 672), (1008, 720), (1920, 1080), (4032, 3024), (499, 501), (47, 49)]


@pytest.mark.parametrize("wh", EDGE)
def test_edge_sizes(wh: tuple[int, int]) -> None:
    _assert_same(noise(*wh, seed=wh[0] * 31 + wh[1]))


def test_threads_do_not_change_bits() -> None:
    _assert_same(noise(1023, 511, seed=5), threads=3)


def test_normalize_on_and_rescale_off() -> None:
    img = noise(300, 200, seed=9)
    _assert_same(img, do_normalize=True, image_mean=(0.5, 0.4, 0.3), image_std=(0.2, 0.3, 0.4))
    _assert_same(img, do_rescale=False)


def _encode(img: Image.Image, fmt: str) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


@pytest.mark.parametrize("mode", ["L", "RGBA", "LA", "P"])
def test_grayscale_and_alpha_from_bytes(mode: str) -> None:
    rng = np.random.default_rng(7)
    rgba = Image.fromarray(rng.integers(0, 256, (120, 190, 4), dtype=np.uint8), "RGBA")
    data = _encode(rgba.convert(mode), "PNG")
    want = hf_pil()(images=[Image.open(io.BytesIO(data))], return_tensors="np")["pixel_values"]
    with mm.pipeline_from_spec({"family": "gemma4", "params": {}}) as pipe:
        out = pipe.process(mm.MmInput(input_ids=[2, 258880, 7], images=[data]))
    np.testing.assert_array_equal(as_bits(out.items[0].feature.array), as_bits(want[0]))
