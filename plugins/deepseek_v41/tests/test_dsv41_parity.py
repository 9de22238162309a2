"""The feature, its aux tensors and the geometry bit for bit against the reference
``patchify_image`` (its numpy statement on the real module's plan and on Pillow's own
``ImageOps.pad`` / ``resize``; see _dsv41_refs.py), over the photo corpus and the family's
edge cases: the ``min_pixels`` upscale, the token-budget shrink, images exactly at the budget,
the tall and wide collapses, the stretch branch, a side that rounds to nothing. Each item also
goes through the compact form, which must expand to the same bits."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from _dsv41_corpus import CASES, PHOTOS, SKIMAGE_DATA, case_args, make_image
from _dsv41_refs import args, patchify_numpy, reference, token_types
from PIL import Image
from sglang_mm_deepseek_v41 import DeepseekV41Family, DeepseekV41Params

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.conformance import process_item_and_compact


def params_of(flat: dict[str, Any], **extra: Any) -> DeepseekV41Params:
    return DeepseekV41Params(
        patch_size=flat["vision_patch_size"],
        downsample_ratio=flat["vision_downsample_ratio"],
        max_image_tokens=flat["vision_max_n_token"],
        min_pixels=flat["vision_min_pixels"],
        max_wh_ratio=flat["vision_max_wh_ratio"],
        **extra,
    )


def _check(image: Image.Image, flat: dict[str, Any]) -> None:
    bits, nh, nw, lh, lw = patchify_numpy(image, args(**flat))
    fam = DeepseekV41Family(params_of(flat))
    item = process_item_and_compact(fam, np.asarray(image.convert("RGB")), threads=2)
    assert item.feature.dtype == "bfloat16"
    assert item.feature.shape == bits.shape
    np.testing.assert_array_equal(item.feature.array, bits)
    assert item.geometry.grid == (nh, nw)
    np.testing.assert_array_equal(item.aux["image_token_types"].array, token_types(lh, lw))
    assert item.aux["n_vit_h"].array.tolist() == [nh]
    assert item.aux["n_vit_w"].array.tolist() == [nw]
    assert fam.plan(image.width, image.height).length == reference().num_image_tokens(lh, lw)


@pytest.mark.parametrize(("cid", "source", "overrides"), CASES, ids=[c[0] for c in CASES])
def test_case(cid: str, source: dict[str, Any], overrides: dict[str, Any]) -> None:
    _check(make_image(source), case_args(overrides))


def test_the_edge_cases_reach_their_branches() -> None:
    """The corpus exercises each branch of the plan it claims to (so none is silently lost)."""
    ref = reference()
    seen = {}
    for cid, source, overrides in CASES:
        if "noise" not in source:
            continue
        w, h, _ = source["noise"]
        a = args(**case_args(overrides))
        lh, lw, bh, bw = ref.plan_image_grid(w, h, a)
        seen[cid] = (ref.num_image_tokens(lh, lw), lh, lw, bh, bw)
    assert seen["1x1561-at-budget"][0] == 1024
    assert seen["22x4000-tall-collapse"][2] == 1  # one token column
    assert seen["4000x22-wide-collapse"][1] == 1  # one token row
    assert seen["97x61-upscaled"][3] * seen["97x61-upscaled"][4] >= 295936
    assert all(v[0] <= 1024 for k, v in seen.items() if "patch16" not in k)


@pytest.mark.parametrize("order", ["pillow13", "pillow12"])
def test_pass_orders_differ_where_pillow_versions_do(order: str) -> None:
    """A 5000x800 image shrinks mostly in height on its canvas row: Pillow 13 resizes
    vertically first, Pillow 12 horizontally first, and the bits differ; ``pil_pass_order``
    picks one (the default is the installed Pillow 13's, which the reference runs on)."""
    flat = case_args({})
    arr = np.asarray(make_image({"noise": [800, 5000, 9]}))
    ours = DeepseekV41Family(params_of(flat)).process_item(arr).feature.array
    other = DeepseekV41Family(params_of(flat, pil_pass_order=order)).process_item(arr)
    same = np.array_equal(ours, other.feature.array)
    assert same == (order == "pillow13")


def _encode(im: Image.Image, fmt: str, **kw: Any) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kw)
    return buf.getvalue()


def _spec(**params: Any) -> dict[str, Any]:
    return {"family": "deepseek_v41", "params": params, "threads": 2}


def test_from_bytes_decode_as_sglangs_load_image() -> None:
    """From encoded bytes, through the decoder: alpha dropped (``convert("RGB")``), EXIF
    orientation ignored, as ``Image.open(BytesIO(data)).load()`` leaves it; every corpus file
    as it is stored, and an RGBA PNG and an EXIF-rotated JPEG made here."""
    rgba = np.random.default_rng(3).integers(0, 256, (90, 130, 4), dtype=np.uint8)
    rgba[..., 3] = np.linspace(0, 255, 130, dtype=np.uint8)
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees when shown
    rotated = _encode(Image.fromarray(rgba[..., :3].copy()), "JPEG", quality=95, exif=exif)
    datas = [(SKIMAGE_DATA / n).read_bytes() for n in PHOTOS]
    datas += [_encode(Image.fromarray(rgba, "RGBA"), "PNG"), rotated]
    pipe = pipeline_from_spec(_spec())
    ids = [1, 129264, 2] * len(datas)
    out = pipe.process(MmInput(input_ids=ids, images=datas))
    flat = case_args({})
    for k, data in enumerate(datas):
        im = Image.open(io.BytesIO(data))
        im.load()
        bits, *_ = patchify_numpy(im, args(**flat))
        np.testing.assert_array_equal(out.items[k].feature.array, bits, err_msg=f"image {k}")
    assert out.input_ids.size == len(ids) - len(datas) + sum(it.tokens for it in out.items)
    counted = pipe.count_tokens(MmInput(input_ids=ids, images=datas))  # from headers alone
    assert counted.per_item == [it.tokens for it in out.items]
    assert counted.length == out.input_ids.size
