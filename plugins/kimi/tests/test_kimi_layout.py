"""The expanded ids and offsets against transformers' ``Kimi_K25Processor`` (replayed from
goldens of gen_goldens.py: the processor needs its torchvision image processor) on a tokenizer
with Kimi's real special-token ids; counts from headers agree with the pipeline and with
``get_number_of_image_patches``; the placeholder rules."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _kimi_corpus import CASES, make_input
from _kimi_refs import ids
from PIL import Image
from sglang_mm_kimi import KimiFamily

import sglang_mm_core as mm

GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "aten_goldens.json").read_text())
PAD = 163605


def _png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "PNG", compress_level=0)  # noise: compression only costs
    return buf.getvalue()


@pytest.mark.parametrize("case", GOLDENS["prompts"], ids=[p["id"] for p in GOLDENS["prompts"]])
def test_expansion_matches_kimi_processor(case: dict[str, Any]) -> None:
    images = [_png(make_input(s)) for s in case["sources"]]
    spec = {"family": "kimi", "params": {"resample": "aten_u8"}}
    with mm.pipeline_from_spec(spec) as pipe:
        out = pipe.process(mm.MmInput(input_ids=ids(case["text"]), images=images))
    want = np.asarray(case["input_ids"])
    assert out.input_ids.tolist() == case["input_ids"]
    grids = [it.aux["image_grid_thw"].array[0].tolist() for it in out.items]
    assert grids == case["image_grid_thw"]
    # Each item's span is its run of <|media_pad|>, between <|media_content|> and <|media_end|>.
    runs = np.flatnonzero(np.diff((want == PAD).astype(np.int8), prepend=0, append=0))
    assert [tuple(r) for r in runs.reshape(-1, 2) - [0, 1]] == list(out.offsets)
    for s, e in out.offsets:
        assert want[s - 1] == 163603 and want[e + 1] == 163604


def test_counts_from_headers_agree_with_the_pipeline_and_hf() -> None:
    """`count_tokens` reads only the headers (through the plan of each size); `process`
    decodes: the prompt length and each item's span agree, and both are
    `get_number_of_image_patches // merge_size**2` of transformers' class (goldens)."""
    cases = [c for c in GOLDENS["cases"] if not c["params"]]
    images = [_png(make_input(c["source"])) for c in cases]
    fam = KimiFamily()
    prompt = fam.example_prompt(len(images))
    for resample in ("pil", "aten_u8"):
        with mm.pipeline_from_spec({"family": "kimi", "params": {"resample": resample}}) as pipe:
            req = mm.MmInput(input_ids=prompt, images=images)
            count = pipe.count_tokens(req)
            out = pipe.process(req)
        assert count.length == len(out.input_ids)
        assert count.per_item == [e - s + 1 for s, e in out.offsets]
        assert count.per_item == [c["num_image_patches"] // 4 for c in cases]


def test_a_missing_placeholder_is_a_layout_error() -> None:
    with mm.pipeline_from_spec({"family": "kimi"}) as pipe:
        with pytest.raises(mm.LayoutError, match="placeholder"):
            pipe.process(mm.MmInput(input_ids=[1000, 1001], images=[_png(make_input(CASES[7][1]))]))
