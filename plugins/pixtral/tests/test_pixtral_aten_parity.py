"""``resample: "aten_u8"`` against HF's torchvision backend (``PixtralImageProcessor`` on the
CPU), and the expansion against the genuine ``PixtralProcessor`` module, both replayed from
what ``gen_goldens.py`` captured with real torch / torchvision (versions in the fixtures).
Bit-exact: whole arrays where stored, else the SHA-256 of all float32 bytes plus sampled rows
compared bit for bit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _pixtral_refs import IMG, MODELS, TEXT, as_bits, gradient, noise, photo
from sglang_mm_pixtral import PixtralFamily, PixtralParams

from sglang_mm_core.conformance import process_item_and_compact

FIXTURES = Path(__file__).parent / "fixtures"
META = json.loads((FIXTURES / "aten_goldens.json").read_text())
ARRAYS = np.load(FIXTURES / "aten_goldens.npz")
PROC = json.loads((FIXTURES / "processor_goldens.json").read_text())


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _input(case: dict[str, Any]) -> np.ndarray:
    src = case["source"]
    if src.get("stored"):
        return ARRAYS[f"{case['id']}/input"]
    if "photo" in src:
        return np.asarray(photo(src["photo"]))
    if "noise" in src:
        w, h, seed = src["noise"]
        return np.asarray(noise(w, h, seed=seed))
    return np.asarray(gradient(*src["gradient"]))


def test_goldens_record_their_reference() -> None:
    assert META["reference"].startswith("transformers.PixtralImageProcessor ")
    for key in ("torch", "torchvision", "transformers", "pillow"):
        assert META[key] and PROC[key], key
    assert len(META["cases"]) >= 60
    assert {m: META["models"][m]["params"] for m in MODELS} == {m: v[0] for m, v in MODELS.items()}


@pytest.mark.parametrize("case", META["cases"], ids=[c["id"] for c in META["cases"]])
def test_torchvision_golden(case: dict[str, Any]) -> None:
    arr = _input(case)
    assert _sha256(arr) == case["input_sha256"], "corpus input changed: rerun gen_goldens.py"
    fam = PixtralFamily(PixtralParams(**MODELS[case["model"]][0], resample="aten_u8"))
    item = process_item_and_compact(fam, arr)
    got = item.feature.array
    assert list(got.shape) == case["pixel_values_shape"]
    np.testing.assert_array_equal(item.aux["image_sizes"].array, case["image_sizes"])
    if case["stored"] == "full":
        np.testing.assert_array_equal(as_bits(got), as_bits(ARRAYS[f"{case['id']}/pixel_values"]))
    else:
        want = ARRAYS[f"{case['id']}/rows"]
        np.testing.assert_array_equal(as_bits(got[:, case["rows"], :]), as_bits(want))
    assert _sha256(got) == case["pixel_values_sha256"]


def test_backends_differ_where_the_references_do() -> None:
    """The PIL and torchvision normalize tables differ on a good share of the values, so a
    golden that also matched the PIL path would prove nothing."""
    arr = ARRAYS["pixtral_12b-levels/input"]
    pil = PixtralFamily(PixtralParams(resample="pil")).process_item(arr).feature.array
    want = ARRAYS["pixtral_12b-levels/pixel_values"]
    assert 0.1 < np.mean(as_bits(pil) != as_bits(want)) < 0.9


@pytest.mark.parametrize("case", PROC["cases"], ids=lambda c: f"{c['model']}-{len(c['text'])}")
def test_genuine_processor_expansion(case: dict[str, Any]) -> None:
    fam = PixtralFamily(PixtralParams(**MODELS[case["model"]][0]))
    vocab = {**TEXT, "[IMG]": IMG}
    ids = np.asarray([vocab[w] for w in case["text"].split()], dtype=np.int64)
    items = [
        fam.process_item(np.asarray(noise(w, h, seed=k)))
        for k, (w, h) in enumerate(case["image_sizes_in"])
    ]
    ex = fam.expand(ids, [it.plan for it in items])
    np.testing.assert_array_equal(ex.input_ids, case["input_ids"])
    assert [it.aux["image_sizes"].array.tolist() for it in items] == case["image_sizes"]
