"""`resample: "pil"` against HF's `Gemma3ImageProcessorPil`, bit for bit: the same decoded
image into both, `pixel_values` compared as float32 bits, `num_crops` exactly; with and
without pan and scan."""

from __future__ import annotations

import io

import numpy as np
import pytest
import skimage.data
from _gemma3_refs import as_bits, hf_pil, noise
from PIL import Image
from sglang_mm_gemma3 import Gemma3Family, Gemma3Params, pan_and_scan_rects

import sglang_mm_core as mm
from sglang_mm_core.conformance import process_item_and_compact


def _assert_same(image: Image.Image, pan_and_scan: bool, threads: int = 1) -> int:
    want = hf_pil(pan_and_scan)(image, return_tensors="np")
    fam = Gemma3Family(Gemma3Params(**_pas_params(pan_and_scan)))
    item = process_item_and_compact(fam, np.asarray(image.convert("RGB")), threads=threads)
    got = item.feature.array
    assert got.shape == want["pixel_values"].shape and got.dtype == np.float32
    np.testing.assert_array_equal(as_bits(got), as_bits(want["pixel_values"]))
    np.testing.assert_array_equal(item.aux["num_crops"].array, want["num_crops"])
    return int(want["num_crops"][0])


def _pas_params(on: bool) -> dict[str, object]:
    if not on:
        return {}
    return {
        "do_pan_and_scan": True,
        "pan_and_scan_prefix_ids": [1],
        "pan_and_scan_infix_ids": [1],
    }


PHOTOS = ["astronaut", "chelsea", "coffee", "rocket"]


@pytest.mark.parametrize("name", PHOTOS)
def test_photos(name: str) -> None:
    img = Image.fromarray(np.ascontiguousarray(getattr(skimage.data, name)()[:, :, :3]))
    _assert_same(img, pan_and_scan=False)


@pytest.mark.parametrize(
    "wh", [(1, 1), (17, 300), (896, 896), (895, 897), (1000, 3), (1920, 1080), (3, 2000)]
)
def test_edge_sizes(wh: tuple[int, int]) -> None:
    _assert_same(noise(*wh, seed=wh[0] * 31 + wh[1]), pan_and_scan=False)


# (width, height, crops HF makes): around the activation ratio 1.2, portrait and landscape,
# the cap of 4 crops, crops under the 256 minimum, images under it.
PAS_CASES = [
    (599, 500, 0),  # 1.198: just under the ratio
    (601, 500, 2),  # 1.202: just over
    (500, 601, 2),  # portrait
    (2000, 300, 4),  # 7 wanted, capped at 4
    (300, 2000, 4),
    (1200, 300, 4),  # exactly 4 crops of 300x300
    (300, 100, 0),  # crops would be 150 wide: under the minimum
    (200, 100, 0),  # smaller than the minimum crop size
    (1023, 511, 2),  # odd sizes: the last crop is one pixel narrower
]


@pytest.mark.parametrize(("w", "h", "crops"), PAS_CASES)
def test_pan_and_scan(w: int, h: int, crops: int) -> None:
    assert _assert_same(noise(w, h, seed=w + h), pan_and_scan=True) == crops
    p = Gemma3Params(**_pas_params(True))  # type: ignore[arg-type]
    assert len(pan_and_scan_rects(w, h, p)) == crops


def test_threads_do_not_change_bits() -> None:
    img = noise(1023, 511, seed=5)
    _assert_same(img, pan_and_scan=True, threads=3)


def _encode(img: Image.Image, fmt: str) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


@pytest.mark.parametrize("mode", ["L", "RGBA", "LA", "P"])
def test_grayscale_and_alpha_from_bytes(mode: str) -> None:
    rng = np.random.default_rng(7)
    rgba = Image.fromarray(rng.integers(0, 256, (120, 190, 4), dtype=np.uint8), "RGBA")
    data = _encode(rgba.convert(mode), "PNG")
    want = hf_pil()(Image.open(io.BytesIO(data)), return_tensors="np")["pixel_values"]
    spec = {"family": "gemma3", "params": {}}
    with mm.pipeline_from_spec(spec) as pipe:
        out = pipe.process(mm.MmInput(input_ids=[2, 255999, 7], images=[data]))
    np.testing.assert_array_equal(as_bits(out.items[0].feature.array), as_bits(want))
