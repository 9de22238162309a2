"""`resample: "aten_u8"` against HF's torchvision backend (`Gemma4ImageProcessor`), replayed
from goldens made by gen_goldens.py with the real torch (versions in the fixture): the SHA-256
of the float32 `pixel_values` and sample values, the SHA-256 of the int64
`image_position_ids` and their patch grid, `num_soft_tokens_per_image` exactly."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _gemma4_corpus import CASES, SAMPLES, make_input
from sglang_mm_gemma4 import Gemma4Family, Gemma4Params

from sglang_mm_core.conformance import process_item_and_compact

GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "aten_goldens.json").read_text())


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def test_goldens_record_their_reference() -> None:
    meta = GOLDENS["meta"]
    assert meta["torch"].startswith("2.") and meta["torchvision"].startswith("0.")
    assert meta["transformers"].startswith("5.") and "Gemma4ImageProcessor" in meta["reference"]
    assert [c["id"] for c in GOLDENS["cases"]] == [cid for cid, _, _ in CASES], "rerun gen"
    assert {c["max_soft_tokens"] for c in GOLDENS["cases"]} == {70, 280, 1120}


@pytest.mark.parametrize("case", GOLDENS["cases"], ids=[c["id"] for c in GOLDENS["cases"]])
def test_torchvision_golden(case: dict[str, Any]) -> None:
    arr = make_input(case["source"])
    assert _sha256(arr) == case["input_sha256"], "corpus input changed: rerun gen_goldens.py"
    params = Gemma4Params(resample="aten_u8", max_soft_tokens=case["max_soft_tokens"])
    item = process_item_and_compact(Gemma4Family(params), arr, threads=2)
    got = item.feature.array
    assert got.dtype == np.float32 and list(got.shape) == case["pixel_values_shape"]
    n = item.aux["num_soft_tokens_per_image"].array
    assert n.tolist() == case["num_soft_tokens_per_image"]
    pos = item.aux["image_position_ids"].array
    g = item.geometry
    assert pos.dtype == np.int64 and [g.height // 16, g.width // 16] == case["patch_grid"]
    assert _sha256(pos) == case["image_position_ids_sha256"]
    want = np.asarray(case["samples"], np.float32)
    at = np.array([got[p, i] for p, i in SAMPLES], np.float32)
    np.testing.assert_array_equal(at.view(np.uint32), want.view(np.uint32))
    assert _sha256(got) == case["pixel_values_sha256"]


def test_backends_differ_where_the_references_do() -> None:
    # Pillow's and torchvision's bicubic differ (weights, rounding): a real downscale tells them
    # apart, so the two modes are not silently the same kernel.
    arr = make_input({"noise": [1920, 1080, 6]})
    a = Gemma4Family(Gemma4Params(resample="pil")).process_item(arr).feature.array
    b = Gemma4Family(Gemma4Params(resample="aten_u8")).process_item(arr).feature.array
    assert not np.array_equal(a, b)
