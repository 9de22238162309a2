"""The expanded ids, offsets and `token_type_ids` against HF's `Gemma3Processor` on a local
tokenizer with Gemma 3's special-token ids; with and without pan and scan."""

from __future__ import annotations

import io

import numpy as np
import pytest
from _gemma3_refs import ids, noise, processor
from PIL import Image
from sglang_mm_gemma3 import Gemma3Params, token_type_ids

import sglang_mm_core as mm

PAS_PHRASES = {
    "pan_and_scan_prefix_ids": ids("Here is the original image "),
    "pan_and_scan_infix_ids": ids(" and here are some crops to help you see better "),
    "pan_and_scan_separator_ids": ids(" "),
}


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


@pytest.mark.parametrize("pan_and_scan", [False, True])
@pytest.mark.parametrize(
    "text",
    [
        "<bos>Describe <start_of_image>",
        "<start_of_image>",
        "<bos>Compare <start_of_image> and <start_of_image> and <start_of_image> here",
    ],
)
def test_expansion_matches_gemma3_processor(text: str, pan_and_scan: bool) -> None:
    n = text.count("<start_of_image>")
    # Landscape (2 crops), portrait (2), square (none under pan and scan).
    images = [noise(700, 500, 1), noise(400, 900, 2), noise(300, 300, 3)][:n]
    # The processor's own default (do_pan_and_scan False) overrides the image processor's.
    call = {"do_pan_and_scan": pan_and_scan, "return_tensors": "np"}
    want = processor(pan_and_scan)(text=text, images=images, **call)
    params: dict[str, object] = {"do_pan_and_scan": pan_and_scan, **PAS_PHRASES}
    prompt = ids(text) if not text.startswith("<bos>") else [2, *ids(text[5:])]
    with mm.pipeline_from_spec({"family": "gemma3", "params": params}) as pipe:
        out = pipe.process(mm.MmInput(input_ids=prompt, images=[_png(i) for i in images]))
    want_ids = want["input_ids"][0]
    assert out.input_ids.tolist() == want_ids.tolist()
    p = Gemma3Params(**params)  # type: ignore[arg-type]
    np.testing.assert_array_equal(token_type_ids(out.input_ids, p), want["token_type_ids"][0])
    # Each item's span starts at its first soft token and ends at its last.
    soft = np.flatnonzero(want_ids == p.image_soft_token_id)
    per = [1 + int(it.aux["num_crops"].array[0]) for it in out.items]
    bounds = np.cumsum([0] + [k * 256 for k in per])
    for k, (s, e) in enumerate(out.offsets):
        assert (s, e) == (soft[bounds[k]], soft[bounds[k + 1] - 1])
    np.testing.assert_array_equal(
        np.concatenate([it.feature.array for it in out.items]), want["pixel_values"]
    )


def test_a_missing_placeholder_is_a_layout_error() -> None:
    with mm.pipeline_from_spec({"family": "gemma3", "params": {}}) as pipe:
        with pytest.raises(mm.LayoutError, match="placeholder"):
            pipe.process(mm.MmInput(input_ids=[2, 1000, 1001], images=[_png(noise(9, 9, 0))]))
        with pytest.raises(mm.LayoutError, match="placeholder"):
            pipe.process(mm.MmInput(input_ids=[2, 255999, 255999], images=[_png(noise(9, 9, 0))]))


def test_params_are_checked_when_the_spec_loads() -> None:
    with pytest.raises(mm.SpecError, match="pan_and_scan_prefix_ids"):
        mm.pipeline_from_spec({"family": "gemma3", "params": {"do_pan_and_scan": True}})
    with pytest.raises(mm.SpecError, match="distinct"):
        mm.pipeline_from_spec({"family": "gemma3", "params": {"eoi_token_id": 255999}})


def test_counts_from_headers_agree_with_the_pipeline() -> None:
    """`count_tokens` reads only the headers (through the plan of each size); `process`
    decodes: the prompt length and each item's span agree, crops or not."""
    params: dict[str, object] = {"do_pan_and_scan": True, **PAS_PHRASES}
    sizes = [(700, 500), (2000, 300), (300, 300), (1, 1), (601, 500), (599, 500)]
    images = [_png(noise(w, h, k)) for k, (w, h) in enumerate(sizes)]
    prompt = [2, *[tok for _ in sizes for tok in (255999, 1000)]]
    with mm.pipeline_from_spec({"family": "gemma3", "params": params}) as pipe:
        req = mm.MmInput(input_ids=prompt, images=images)
        count = pipe.count_tokens(req)
        out = pipe.process(req)
    assert count.length == len(out.input_ids)
    assert count.per_item == [e - s + 1 for s, e in out.offsets]
    crops = [int(it.aux["num_crops"].array[0]) for it in out.items]
    assert crops == [2, 4, 0, 0, 2, 0]
