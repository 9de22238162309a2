"""``resample: "aten_u8"`` against HF's torchvision backends (``Glm4vImageProcessor``,
``Glm46VImageProcessor``), replayed from goldens made by gen_goldens.py with the real torch
(versions in the fixture): the SHA-256 of the float32 ``pixel_values`` and sample values,
``image_grid_thw`` exactly, over photos and the resize's edge sizes at three ``size``
settings."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _glm4v_corpus import CASES, SAMPLES, make_input
from sglang_mm_glm4v import Glm4vFamily

from sglang_mm_core.conformance import process_item_and_compact

GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "aten_goldens.json").read_text())


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def test_goldens_record_their_reference() -> None:
    assert GOLDENS["torch"].startswith("2.") and GOLDENS["torchvision"].startswith("0.")
    assert GOLDENS["transformers"] == "5.23.0"
    assert [c["id"] for c in GOLDENS["cases"]] == [c[0] for c in CASES], "rerun gen_goldens.py"
    assert {c["class"] for c in GOLDENS["cases"]} == {
        "Glm4vImageProcessor",
        "Glm46VImageProcessor",
    }
    assert [tuple(p) for p in GOLDENS["sample_points"]] == SAMPLES


@pytest.mark.parametrize("case", GOLDENS["cases"], ids=[c["id"] for c in GOLDENS["cases"]])
def test_torchvision_golden(case: dict[str, Any]) -> None:
    arr = make_input(case["source"])
    assert _sha256(arr) == case["input_sha256"], "corpus input changed: rerun gen_goldens.py"
    size = case["size"]
    params = {
        "resample": "aten_u8",
        "min_pixels": size["shortest_edge"],
        "max_pixels": size["longest_edge"],
    }
    item = process_item_and_compact(Glm4vFamily(params), arr, threads=2)
    got = item.feature.array
    assert got.dtype == np.float32 and list(got.shape) == case["pixel_values_shape"]
    assert item.aux["image_grid_thw"].array.tolist() == case["image_grid_thw"]
    want = np.asarray(case["samples"], np.float32)
    at = np.array([got[r, c] for r, c in SAMPLES], np.float32)
    np.testing.assert_array_equal(at.view(np.uint32), want.view(np.uint32))
    assert _sha256(got) == case["pixel_values_sha256"]
