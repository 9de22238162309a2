"""Params: every field and rule of the spec table, the four generations' values, and
validation errors that name the offending value."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pydantic import ValidationError
from sglang_mm_qwen_vl import QWEN2_5_VL, QWEN2_VL, QWEN3_5, QWEN3_VL, QwenVLFamily, QwenVLParams

from sglang_mm_core import Registry, load_spec
from sglang_mm_core.errors import SpecError


def test_defaults_are_qwen2_vl():
    p = QwenVLParams()
    assert (p.patch_size, p.merge_size, p.temporal_patch_size) == (14, 2, 2)
    assert (p.min_pixels, p.max_pixels) == (3136, 12845056)
    assert p.image_mean == (0.48145466, 0.4578275, 0.40821073)
    assert p.image_std == (0.26862954, 0.26130258, 0.27577711)
    assert (p.image_token_id, p.vision_start_token_id, p.vision_end_token_id) == (
        151655,
        151652,
        151653,
    )
    assert (p.resample, p.smart_resize, p.pil_pass_order, p.strict_layout) == (
        "aten_u8",
        "hf",
        "pillow13",
        True,
    )


@pytest.mark.parametrize(
    ("values", "ps", "lo", "hi", "img"),
    [
        (QWEN2_VL, 14, 3136, 12845056, 151655),
        (QWEN2_5_VL, 14, 3136, 12845056, 151655),
        (QWEN3_VL, 16, 65536, 16777216, 151655),
        (QWEN3_5, 16, 65536, 16777216, 248056),
    ],
)
def test_generations_are_expressible(values, ps, lo, hi, img):
    p = QwenVLParams(**values)
    assert (p.patch_size, p.min_pixels, p.max_pixels, p.image_token_id) == (ps, lo, hi, img)
    fam = QwenVLFamily(p)
    item = fam.process_item(np.zeros((300, 400, 3), dtype=np.uint8))
    assert item.feature.shape[1] == 3 * 2 * ps * ps


def test_json_round_trip():
    p = QwenVLParams(**QWEN3_5, resample="pil", smart_resize="sglang", pil_pass_order="pillow12")
    assert QwenVLParams.model_validate_json(p.model_dump_json()) == p
    assert QwenVLParams.model_validate(json.loads(json.dumps(p.model_dump(mode="json")))) == p


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("image_std", (0.5, 0.0, 0.5), r"image_std\[1\] is 0.0"),
        ("image_std", (0.0, 0.5, 0.5), r"image_std\[0\] is 0.0"),
        ("image_std", (0.5, 0.5, float("nan")), r"image_std\[2\] is nan"),
        ("image_mean", (float("inf"), 0.5, 0.5), r"image_mean\[0\] is inf"),
        ("image_mean", (0.5, 0.5), "image_mean"),
        ("patch_size", 0, "patch_size"),
        ("merge_size", -1, "merge_size"),
        ("temporal_patch_size", 0, "temporal_patch_size"),
        ("min_pixels", 0, "min_pixels"),
        ("max_pixels", 2**53 + 1, "max_pixels"),
        ("image_token_id", -5, "image_token_id"),
        ("resample", "bilinear", "resample"),
        ("smart_resize", "vllm", "smart_resize"),
        ("pil_pass_order", "pillow11", "pil_pass_order"),
        ("unknown_field", 1, "unknown_field"),
    ],
)
def test_invalid_values_are_named(field, value, message):
    with pytest.raises(ValidationError, match=message):
        QwenVLParams(**{field: value})


def test_min_pixels_over_max_pixels_names_both():
    with pytest.raises(ValidationError, match=r"min_pixels \(5000\) must not exceed max_pixels"):
        QwenVLParams(min_pixels=5000, max_pixels=4000)


def test_token_ids_must_differ():
    with pytest.raises(ValidationError, match="must differ"):
        QwenVLParams(vision_start_token_id=151655)


def test_bad_params_in_a_spec_are_a_spec_error():
    reg = Registry()
    reg.register_family(QwenVLFamily)
    with pytest.raises(SpecError, match=r"image_std"):
        load_spec({"family": "qwen_vl", "params": {"image_std": [0.5, 0, 0.5]}}, registry=reg)
    with pytest.raises(SpecError, match=r"min_pixels \(9\) must not exceed max_pixels \(8\)"):
        load_spec({"family": "qwen_vl", "params": {"min_pixels": 9, "max_pixels": 8}}, registry=reg)


def test_decode_defaults_follow_hf_load_image():
    assert QwenVLFamily.decode_defaults.alpha == "white"
    assert QwenVLFamily.decode_defaults.exif_orientation is True
    assert QwenVLFamily.modalities == frozenset({"image", "video"})
