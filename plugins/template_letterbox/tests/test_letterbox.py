"""The template's tests: the conformance suite, and bit-exact parity with the real references
(Pillow's ``ImageOps.pad`` for the pixels, HF's ``rescale`` and ``normalize`` for the
values), both fed the same decoded RGB pixels."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from numpy.testing import assert_array_equal
from PIL import Image, ImageOps
from sglang_mm_letterbox import LetterboxFamily
from transformers.image_transforms import normalize, rescale

import sglang_mm_core as mm
from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

IMAGE = 32000
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "224-black": {
        "size": 224,
        "patch_size": 16,
        "fill": (0, 0, 0),
        "image_mean": (0.5, 0.5, 0.5),
        "image_std": (0.5, 0.5, 0.5),
    },
    "448-white": {"size": 448, "fill": (255, 255, 255)},
}
# Odd sizes and extreme aspect ratios; at 336, 32x1 and 5x672 fit as 10.5 and 2.5 pixels and
# 333x336 and 336x331 leave margins of 1.5 and 2.5 pixels a side, where Pillow's Python
# `round` goes half to even.
SIZES = [(1, 1), (2, 1), (1, 3), (17, 300), (300, 17), (336, 336), (337, 335), (641, 479)]
SIZES += [(1000, 3), (3, 1000), (32, 1), (5, 672), (333, 336), (336, 331), (2048, 1536)]

SMALL = ConformanceTarget.from_family(LetterboxFamily, CONFIGS["224-black"])
SMALL.id = "letterbox[224-black]"


@parametrize_with_checks([LetterboxFamily, SMALL])
def test_conformance(target, check):  # type: ignore[no-untyped-def]
    check(target)


def padded(pixels: npt.NDArray[np.uint8], params: dict[str, Any]) -> npt.NDArray[np.uint8]:
    """Pillow's letterbox of ``pixels``, HWC."""
    p = LetterboxFamily(params).params
    image = Image.fromarray(pixels)
    out = ImageOps.pad(image, (p.size, p.size), method=Image.Resampling.BICUBIC, color=p.fill)
    return np.asarray(out)


def reference(pixels: npt.NDArray[np.uint8], params: dict[str, Any]) -> npt.NDArray[np.float32]:
    """What the model was trained with: Pillow's letterbox, then HF's rescale and normalize
    (the numpy functions of its PIL backends), channels first."""
    p = LetterboxFamily(params).params
    hwc = "channels_last"
    x = rescale(padded(pixels, params), 1 / 255, input_data_format=hwc)
    x = normalize(x, p.image_mean, p.image_std, input_data_format=hwc)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def noise(w: int, h: int) -> npt.NDArray[np.uint8]:
    return np.random.default_rng(w * 1000 + h).integers(0, 256, (h, w, 3), dtype=np.uint8)


def png(pixels: npt.NDArray[np.uint8]) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize(("w", "h"), SIZES)
def test_pixels_match_the_references(w: int, h: int, config: str) -> None:
    params = CONFIGS[config]
    pixels = noise(w, h)
    want = reference(pixels, params)
    with mm.pipeline_from_spec({"family": "letterbox", "params": params}) as pipe:
        out = pipe.process(mm.MmInput(input_ids=[1, IMAGE, 2], images=[png(pixels)]))
    feature = out.items[0].feature.array
    assert feature.dtype == want.dtype == np.float32
    assert_array_equal(feature.view(np.uint32), want.view(np.uint32))
    patch = LetterboxFamily(params).params.patch_size
    tokens = (want.shape[1] // patch) * (want.shape[2] // patch)  # the vision tower's grid
    assert out.input_ids.tolist() == [1] + [IMAGE] * tokens + [2]
    assert out.offsets == [(1, tokens)]


@pytest.mark.parametrize(("w", "h"), [(17, 300), (333, 336), (641, 479)])
def test_compact_codes_are_pillows_canvas(w: int, h: int) -> None:
    """The compact form carries the canvas's own samples (channel planes), which the core's
    table expands to the full feature."""
    pixels = noise(w, h)
    codes = LetterboxFamily().process_item(pixels, compact=True).feature.codes
    assert_array_equal(codes.reshape(3, 336, 336), padded(pixels, {}).transpose(2, 0, 1))


@pytest.mark.parametrize(("w", "h"), [(672, 1), (1, 673)])
def test_an_image_that_fits_as_nothing_is_refused(w: int, h: int) -> None:
    """Pillow letterboxes a 672x1 image into 336² as a 336x0 resize, a canvas of nothing but
    fill; the family refuses such a size, for a count from headers and for the item alike."""
    assert (padded(noise(w, h), {}) == (122, 116, 104)).all()
    request = mm.MmInput(input_ids=[1, IMAGE, 2], images=[png(noise(w, h))])
    with mm.pipeline_from_spec({"family": "letterbox"}) as pipe:
        with pytest.raises(mm.KernelArgumentError, match=f"a {w}x{h} image fits"):
            pipe.process(request)
        with pytest.raises(mm.KernelArgumentError, match=f"a {w}x{h} image fits"):
            pipe.count_tokens(request)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"size": 300}, "multiple of patch_size"),
        ({"fill": (0, 256, 0)}, "less than or equal to 255"),
        ({"image_std": (0.5, 0.0, 0.5)}, "must not be zero"),
    ],
)
def test_params_are_checked_when_the_spec_loads(params: dict[str, Any], message: str) -> None:
    with pytest.raises(mm.SpecError, match=message):
        mm.pipeline_from_spec({"family": "letterbox", "params": params})
