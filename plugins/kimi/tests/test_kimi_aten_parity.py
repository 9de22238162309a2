"""``resample: "aten_u8"`` against transformers' ``Kimi_K25ImageProcessor`` (its torchvision
backend, the only one it has), replayed from goldens made by gen_goldens.py with the real torch
(versions in the fixture): the SHA-256 of the float32 ``pixel_values`` and sample values by
their bits, ``image_grid_thw`` and the header-only ``get_number_of_image_patches`` exactly;
the compact form expands to the same bits."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _kimi_corpus import CASES, SAMPLES, make_input
from sglang_mm_kimi import KimiFamily, KimiParams

from sglang_mm_core.conformance import process_item_and_compact

GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "aten_goldens.json").read_text())


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def test_goldens_record_their_reference() -> None:
    meta = GOLDENS["meta"]
    assert meta["torch"].startswith("2.") and meta["torchvision"].startswith("0.")
    assert meta["transformers"] == "5.23.0" and "Kimi_K25ImageProcessor" in meta["reference"]
    assert [c["id"] for c in GOLDENS["cases"]] == [cid for cid, _, _ in CASES], "rerun gen"


@pytest.mark.parametrize("case", GOLDENS["cases"], ids=[c["id"] for c in GOLDENS["cases"]])
def test_torchvision_golden(case: dict[str, Any]) -> None:
    arr = make_input(case["source"])
    assert _sha256(arr) == case["input_sha256"], "corpus input changed: rerun gen_goldens.py"
    fam = KimiFamily(KimiParams.model_validate({"resample": "aten_u8", **case["params"]}))
    item = process_item_and_compact(fam, arr, threads=2)
    got = item.feature.array
    assert got.dtype == np.float32 and list(got.shape) == case["pixel_values_shape"]
    assert item.aux["image_grid_thw"].array.tolist() == case["image_grid_thw"]
    h, w = arr.shape[:2]
    assert fam.plan(w, h).content * fam.params.merge_size**2 == case["num_image_patches"]
    want = np.asarray(case["samples"], np.float32)
    at = np.array([got[p, c, y, x] for p, c, y, x in SAMPLES], np.float32)
    np.testing.assert_array_equal(at.view(np.uint32), want.view(np.uint32))
    assert _sha256(got) == case["pixel_values_sha256"]


def test_the_two_references_differ_on_a_downscale() -> None:
    # Pillow's and torchvision's bicubic differ (weights, rounding): a real downscale tells them
    # apart, so the two modes are not silently the same kernel.
    arr = make_input({"mosaic": ["astronaut.jpg", 1920, 1080]})
    small = {"max_patches": 4096}
    a = KimiFamily({"resample": "pil", **small}).process_item(arr).feature.array
    b = KimiFamily({"resample": "aten_u8", **small}).process_item(arr).feature.array
    assert a.shape == b.shape and not np.array_equal(a, b)
