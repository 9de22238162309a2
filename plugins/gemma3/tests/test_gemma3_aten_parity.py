"""`resample: "aten_u8"` against HF's torchvision backend (`Gemma3ImageProcessor`), replayed
from goldens made by gen_goldens.py with the real torch (versions in the fixture): the SHA-256
of the float32 `pixel_values` and sample values, `num_crops` exactly."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _gemma3_corpus import SAMPLES, make_input
from sglang_mm_gemma3 import Gemma3Family, Gemma3Params

from sglang_mm_core.conformance import process_item_and_compact

GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "aten_goldens.json").read_text())
PAS = {"do_pan_and_scan": True, "pan_and_scan_prefix_ids": [1], "pan_and_scan_infix_ids": [1]}


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def test_goldens_record_their_reference() -> None:
    meta = GOLDENS["meta"]
    assert meta["torch"].startswith("2.") and meta["torchvision"].startswith("0.")
    assert meta["transformers"].startswith("5.") and "Gemma3ImageProcessor" in meta["reference"]
    assert any(c["num_crops"][0] == 4 for c in GOLDENS["cases"])  # the cap is exercised


@pytest.mark.parametrize("case", GOLDENS["cases"], ids=[c["id"] for c in GOLDENS["cases"]])
def test_torchvision_golden(case: dict[str, Any]) -> None:
    arr = make_input(case["source"])
    assert _sha256(arr) == case["input_sha256"], "corpus input changed: rerun gen_goldens.py"
    extra = PAS if case["pan_and_scan"] else {}
    fam = Gemma3Family(Gemma3Params(resample="aten_u8", **extra))  # type: ignore[arg-type]
    item = process_item_and_compact(fam, arr, threads=2)
    got = item.feature.array
    assert list(got.shape) == case["pixel_values_shape"]
    assert item.aux["num_crops"].array.tolist() == case["num_crops"]
    want = np.asarray(case["samples"], np.float32)
    np.testing.assert_array_equal(
        np.array([[crop[c, y, x] for c, y, x in SAMPLES] for crop in got]), want
    )
    assert _sha256(got) == case["pixel_values_sha256"]


def test_backends_differ_where_the_references_do() -> None:
    # Pillow's and torchvision's bilinear differ in weight precision: a real downscale tells
    # them apart, so the two modes are not silently the same kernel.
    arr = make_input({"noise": [1920, 1080, 4]})
    a = Gemma3Family(Gemma3Params(resample="pil")).process_item(arr).feature.array
    b = Gemma3Family(Gemma3Params(resample="aten_u8")).process_item(arr).feature.array
    assert not np.array_equal(a, b)
