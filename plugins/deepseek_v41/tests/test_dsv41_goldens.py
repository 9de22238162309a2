"""The real reference, run with torch by gen_goldens.py (versions in the fixture), replayed
without torch: the family's bfloat16 bits, grids and token types against the SHA-256 of
``patchify_image``'s and ``image_token_types``' outputs; and the numpy statement the live
tests use against the same goldens, so that statement is the reference's arithmetic."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _dsv41_corpus import CASES, case_args, make_image
from _dsv41_refs import REFERENCE, args, patchify_numpy
from sglang_mm_deepseek_v41 import DeepseekV41Family
from test_dsv41_parity import params_of

from sglang_mm_core.conformance import process_item_and_compact

GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "reference_goldens.json").read_text())
BY_ID = {c["id"]: c for c in GOLDENS["cases"]}


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def test_goldens_record_their_reference() -> None:
    meta = GOLDENS["meta"]
    assert meta["torch"].startswith("2.") and meta["pillow"].startswith("13.")
    assert meta["reference_sha256"] == hashlib.sha256(REFERENCE.read_bytes()).hexdigest()
    assert sorted(BY_ID) == sorted(c[0] for c in CASES), "corpus changed: rerun gen_goldens.py"


@pytest.mark.parametrize(("cid", "source", "overrides"), CASES, ids=[c[0] for c in CASES])
def test_reference_golden(cid: str, source: dict[str, Any], overrides: dict[str, Any]) -> None:
    golden = BY_ID[cid]
    assert golden["source"] == source and golden["overrides"] == overrides
    image = make_image(source)
    assert _sha256(np.asarray(image)) == golden["input_sha256"], "input changed: rerun"
    flat = case_args(overrides)
    item = process_item_and_compact(
        DeepseekV41Family(params_of(flat)), np.asarray(image.convert("RGB")), threads=2
    )
    assert list(item.feature.shape) == golden["shape"]
    assert list(item.geometry.grid) == golden["n_vit"]
    assert _sha256(item.feature.array) == golden["patches_sha256"]
    assert _sha256(item.aux["image_token_types"].array) == golden["token_types_sha256"]
    bits, *grid = patchify_numpy(image, args(**flat))
    assert _sha256(bits) == golden["patches_sha256"]
    assert grid == [*golden["n_vit"], *golden["n_llm"]]
