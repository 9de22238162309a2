"""`resample: "aten_u8"` against HuggingFace's torchvision backend (`GotOcr2ImageProcessor` with
`crop_to_patches`, on the CPU), and the model card's `load_image` run with the real torchvision
transforms, both replayed from the goldens `gen_goldens.py` captured (versions in the JSON
files). Bit-exact: whole arrays where stored, else the SHA-256 of all the float32 bytes plus
sampled rows compared bit for bit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _internvl_refs import as_bits, gradient, noise, photo
from sglang_mm_internvl import InternVLFamily, InternVLParams

from sglang_mm_core.conformance import process_item_and_compact

FIXTURES = Path(__file__).parent / "fixtures"
ATEN = json.loads((FIXTURES / "aten_goldens.json").read_text())
ATEN_ARRAYS = np.load(FIXTURES / "aten_goldens.npz")
CARD = json.loads((FIXTURES / "model_card_goldens.json").read_text())
CARD_ARRAYS = np.load(FIXTURES / "model_card_goldens.npz")


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _input(case: dict[str, Any], arrays: Any) -> np.ndarray:
    src = case["source"]
    if src.get("stored"):
        return arrays[f"{case['id']}/input"]
    if "photo" in src:
        return np.asarray(photo(src["photo"]))
    if "noise" in src:
        return np.asarray(noise(*src["noise"][:2], seed=src["noise"][2]))
    if "gradient" in src:
        return np.asarray(gradient(*src["gradient"]))
    raise AssertionError(f"unknown source {src}")


def _compare(got: np.ndarray, case: dict[str, Any], arrays: Any) -> None:
    assert list(got.shape) == case["pixel_values_shape"]
    if case["stored"] == "full":
        np.testing.assert_array_equal(as_bits(got), as_bits(arrays[f"{case['id']}/pixel_values"]))
    else:
        tiles, rows = case["sample_tiles"], case["sample_rows"]
        sampled = np.ascontiguousarray(got[tiles][:, :, rows, :])
        np.testing.assert_array_equal(as_bits(sampled), as_bits(arrays[f"{case['id']}/samples"]))
    assert _sha256(got) == case["pixel_values_sha256"]


def test_goldens_record_their_reference():
    assert ATEN["reference"].startswith("transformers.GotOcr2ImageProcessor")
    assert CARD["reference"].startswith("InternVL model card load_image")
    for meta in (ATEN, CARD):
        for key in ("torch", "torchvision", "transformers", "pillow"):
            assert meta[key], key
    assert len(ATEN["cases"]) >= 30 and len(CARD["cases"]) >= 8


@pytest.mark.parametrize("case", ATEN["cases"], ids=[c["id"] for c in ATEN["cases"]])
def test_torchvision_golden(case):
    arr = _input(case, ATEN_ARRAYS)
    assert _sha256(arr) == case["input_sha256"], "corpus input changed: rerun gen_goldens.py"
    fam = InternVLFamily(InternVLParams(**ATEN["params"][case["params"]], resample="aten_u8"))
    item = process_item_and_compact(fam, arr)
    assert item.aux["num_patches"].array.tolist() == case["num_patches"]
    _compare(item.feature.array, case, ATEN_ARRAYS)


@pytest.mark.parametrize("case", CARD["cases"], ids=[c["id"] for c in CARD["cases"]])
def test_model_card_golden(case):
    arr = _input(case, CARD_ARRAYS)
    assert _sha256(arr) == case["input_sha256"], "corpus input changed: rerun gen_goldens.py"
    params = InternVLParams(
        resample="pil",
        tiling="model_card",
        min_patches=case["min_patches"],
        max_patches=case["max_patches"],
    )
    _compare(process_item_and_compact(InternVLFamily(params), arr).feature.array, case, CARD_ARRAYS)


def test_backends_differ_where_the_references_do():
    """The two normalize tables differ by an ulp or so on part of the values, so a golden that
    also matched the PIL path would prove nothing."""
    arr = ATEN_ARRAYS["levels-28/input"]
    case = next(c for c in ATEN["cases"] if c["id"] == "levels-28")
    params = ATEN["params"]["tile28"]
    pil = InternVLFamily(InternVLParams(**params, resample="pil")).process_item(arr).feature.array
    want = ATEN_ARRAYS["levels-28/pixel_values"]
    assert case["stored"] == "full"
    differ = np.mean(as_bits(pil) != as_bits(want))
    assert 0.05 < differ < 0.95, differ
