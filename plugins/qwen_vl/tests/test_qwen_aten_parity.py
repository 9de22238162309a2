"""`resample: "aten_u8"` against HuggingFace's torchvision backend (`Qwen2VLImageProcessor` on
the CPU), replayed from the goldens `gen_goldens.py` captured with the real torch/torchvision
(versions in fixtures/aten_goldens.json). Bit-exact: whole arrays where stored, else the SHA-256
of all float32 bytes plus sampled rows compared bit for bit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _qwen_refs import as_bits, gradient, noise, photo
from sglang_mm_qwen_vl import QwenVLFamily, QwenVLParams

FIXTURES = Path(__file__).parent / "fixtures"
META = json.loads((FIXTURES / "aten_goldens.json").read_text())
ARRAYS = np.load(FIXTURES / "aten_goldens.npz")


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _input(case: dict[str, Any]) -> np.ndarray:
    src = case["source"]
    if src.get("stored"):
        return ARRAYS[f"{case['id']}/input"]
    if "photo" in src:
        return np.asarray(photo(src["photo"]))
    if "photo_resized" in src:
        name, w, h = src["photo_resized"]
        return np.asarray(photo(name).resize((w, h)))
    if "noise" in src:
        return np.asarray(noise(*src["noise"][:2], seed=src["noise"][2]))
    if "gradient" in src:
        return np.asarray(gradient(*src["gradient"]))
    raise AssertionError(f"unknown source {src}")


def test_goldens_record_their_reference():
    assert META["reference"].startswith("transformers.Qwen2VLImageProcessor")
    for key in ("torch", "torchvision", "transformers", "pillow"):
        assert META[key], key
    assert len(META["cases"]) >= 50


@pytest.mark.parametrize("case", META["cases"], ids=[c["id"] for c in META["cases"]])
def test_torchvision_golden(case):
    arr = _input(case)
    assert _sha256(arr) == case["input_sha256"], "corpus input changed: rerun gen_goldens.py"
    params = META["params"][case["params"]]
    fam = QwenVLFamily(QwenVLParams(**params, resample="aten_u8"))
    item = fam.process_item(arr)
    got = item.feature.array
    np.testing.assert_array_equal(item.aux["image_grid_thw"].array, np.array(case["grid_thw"]))
    assert list(got.shape) == case["pixel_values_shape"]
    if case["stored"] == "full":
        want = ARRAYS[f"{case['id']}/pixel_values"]
        np.testing.assert_array_equal(as_bits(got), as_bits(want))
    else:
        want_rows = ARRAYS[f"{case['id']}/rows"]
        np.testing.assert_array_equal(as_bits(got[case["rows"]]), as_bits(want_rows))
    assert _sha256(got) == case["pixel_values_sha256"]
    compact = fam.process_item(arr, compact=True).feature
    assert _sha256(compact.expand().array) == case["pixel_values_sha256"]


def test_backends_differ_where_the_references_do():
    """The two normalize tables differ by an ulp or two on about half the values (spec), so a
    golden that also matched the PIL path would prove nothing."""
    case = next(c for c in META["cases"] if c["id"] == "qwen2-levels")
    arr = ARRAYS["qwen2-levels/input"]
    params = META["params"]["qwen2"]
    pil = QwenVLFamily(QwenVLParams(**params, resample="pil")).process_item(arr).feature.array
    want = ARRAYS[f"{case['id']}/pixel_values"]
    differ = np.mean(as_bits(pil) != as_bits(want))
    assert 0.2 < differ < 0.8, differ
