"""``resample: "pil"`` against the checkpoint's own processor (``KimiK25VisionProcessor``,
restated step for step in _kimi_refs.py with the same Pillow and numpy calls), live: the same
image into both, ``pixel_values`` compared by float32 bits (the compact form too) and the grid
exactly, over the whole corpus, every params variant, and encoded bytes through the pipeline
(where the checkpoint's ``Image.open(...).convert("RGB")`` drops alpha and ignores EXIF)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from _kimi_corpus import CASES, IMAGES, make_input
from _kimi_refs import as_bits, checkpoint_pixels
from PIL import Image
from sglang_mm_kimi import KimiFamily, KimiParams

import sglang_mm_core as mm
from sglang_mm_core.conformance import process_item_and_compact


def _checkpoint_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """Our (HF) names as the checkpoint's media_proc_cfg names them."""
    out: dict[str, Any] = {}
    if "max_patches" in params:
        out["in_patch_limit"] = params["max_patches"]
    if "size" in params:
        out["patch_limit_on_one_side"] = params["size"]["max_height"]
    return out


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_corpus(case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, source, params = case
    arr = make_input(source)
    want, grid = checkpoint_pixels(Image.fromarray(arr), **_checkpoint_kwargs(params))
    fam = KimiFamily(KimiParams.model_validate({"resample": "pil", **params}))
    item = process_item_and_compact(fam, arr, threads=2)
    assert item.feature.array.shape == want.shape
    np.testing.assert_array_equal(as_bits(item.feature.array), as_bits(want))
    assert item.aux["image_grid_thw"].array.tolist() == [grid]


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def _rgba_with_exif_rotation() -> bytes:
    """A transparent-edged RGBA PNG whose EXIF says 'rotate 90': the checkpoint ignores both."""
    rng = np.random.default_rng(7)
    rgba = rng.integers(0, 256, (90, 200, 4), dtype=np.uint8)
    rgba[:, :40, 3] = 0
    im = Image.fromarray(rgba)
    exif = Image.Exif()
    exif[0x0112] = 6
    buf = io.BytesIO()
    im.save(buf, "PNG", exif=exif)
    return buf.getvalue()


def _jpeg(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "JPEG", quality=90)
    return buf.getvalue()


SOURCES = {
    **{p.name: p.read_bytes() for p in sorted(IMAGES.iterdir()) if p.suffix != ".py"},
    "rgba-exif.png": _rgba_with_exif_rotation(),
    "gray.png": _png(Image.fromarray(make_input({"noise": [300, 200, 5]})[:, :, 0])),
    "big.jpg": _jpeg(make_input({"mosaic": ["coffee.webp", 2600, 1900]})),
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_encoded_bytes_through_the_pipeline(name: str) -> None:
    """The default decode (alpha dropped, EXIF ignored) is the checkpoint's loader."""
    data = SOURCES[name]
    want, grid = checkpoint_pixels(data)
    with mm.pipeline_from_spec({"family": "kimi"}) as pipe:
        fam = KimiFamily()
        out = pipe.process(mm.MmInput(input_ids=fam.example_prompt(1), images=[data]))
    (item,) = out.items
    np.testing.assert_array_equal(as_bits(item.feature.array), as_bits(want))
    assert item.aux["image_grid_thw"].array.tolist() == [grid]


def test_the_padding_is_the_normalized_zero_sample() -> None:
    """Both references pad the uint8 image with 0 before normalizing: -1.0 with mean and std
    0.5, never 0.0."""
    arr = make_input({"noise": [30, 15, 3]})  # pads to 56 x 28: rows 15.. and cols 30.. are pad
    item = KimiFamily().process_item(arr)
    planes = item.feature.array.reshape(2, 4, 3, 14, 14).transpose(2, 0, 3, 1, 4).reshape(3, 28, 56)
    assert (planes[:, 15:, :] == -1.0).all() and (planes[:, :, 30:] == -1.0).all()
    assert (planes[:, :15, :30] != -1.0).any()


def test_a_normalize_the_checkpoint_computes_differently_is_refused() -> None:
    # CLIP's mean and std: the checkpoint's float64 subtract and 1/std multiply differ from the
    # core's numpy table on some values, so the 'pil' mode refuses them (aten_u8 takes them).
    clip = {"image_mean": mm.plugin.CLIP_MEAN, "image_std": mm.plugin.CLIP_STD}
    with pytest.raises(mm.SpecError, match="cannot match it bit for bit"):
        mm.pipeline_from_spec({"family": "kimi", "params": clip})
    KimiParams.model_validate({**clip, "resample": "aten_u8"})
