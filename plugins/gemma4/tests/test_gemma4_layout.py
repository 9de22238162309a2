"""The expanded ids and offsets against HF's `Gemma4Processor` on a local tokenizer with Gemma
4's special-token ids, `mm_token_type_ids` too; counts from headers agree with the pipeline."""

from __future__ import annotations

import io

import numpy as np
import pytest
from _gemma4_refs import ids, noise, processor
from PIL import Image
from sglang_mm_gemma4 import Gemma4Params, mm_token_type_ids

import sglang_mm_core as mm


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _prompt(text: str) -> list[int]:
    return [2, *ids(text[5:])] if text.startswith("<bos>") else ids(text)


@pytest.mark.parametrize("tokens", [70, 280, 1120])
@pytest.mark.parametrize(
    "text",
    [
        "<bos>Describe <|image|>",
        "<|image|>",
        "<bos>Compare <|image|> and <|image|> and <|image|> here",
    ],
)
def test_expansion_matches_gemma4_processor(text: str, tokens: int) -> None:
    n = text.count("<|image|>")
    images = [noise(700, 500, 1), noise(40, 900, 2), noise(300, 300, 3)][:n]
    want = processor(max_soft_tokens=tokens)(text=[text], images=[images], return_tensors="np")
    params = {"max_soft_tokens": tokens}
    with mm.pipeline_from_spec({"family": "gemma4", "params": params}) as pipe:
        out = pipe.process(mm.MmInput(input_ids=_prompt(text), images=[_png(i) for i in images]))
    want_ids = want["input_ids"][0]
    assert out.input_ids.tolist() == want_ids.tolist()
    p = Gemma4Params(**params)  # type: ignore[arg-type]
    np.testing.assert_array_equal(mm_token_type_ids(out.input_ids, p), want["mm_token_type_ids"][0])
    # Each item's span runs from its first <|image|> to its last, inside <boi> ... <eoi>.
    soft = np.flatnonzero(want_ids == p.image_token_id)
    counts = [int(it.aux["num_soft_tokens_per_image"].array[0]) for it in out.items]
    bounds = np.cumsum([0, *counts])
    for k, (s, e) in enumerate(out.offsets):
        assert (s, e) == (soft[bounds[k]], soft[bounds[k + 1] - 1])
        assert want_ids[s - 1] == p.boi_token_id and want_ids[e + 1] == p.eoi_token_id
    np.testing.assert_array_equal(
        np.stack([it.feature.array for it in out.items]), want["pixel_values"]
    )
    np.testing.assert_array_equal(
        np.stack([it.aux["image_position_ids"].array for it in out.items]),
        want["image_position_ids"],
    )


def test_a_missing_placeholder_is_a_layout_error() -> None:
    with mm.pipeline_from_spec({"family": "gemma4", "params": {}}) as pipe:
        with pytest.raises(mm.LayoutError, match="placeholder"):
            pipe.process(mm.MmInput(input_ids=[2, 1000, 1001], images=[_png(noise(9, 9, 0))]))


def test_params_are_checked_when_the_spec_loads() -> None:
    with pytest.raises(mm.SpecError, match="max_soft_tokens must be one of"):
        mm.pipeline_from_spec({"family": "gemma4", "params": {"max_soft_tokens": 300}})
    with pytest.raises(mm.SpecError, match="distinct"):
        mm.pipeline_from_spec({"family": "gemma4", "params": {"eoi_token_id": 255999}})


def test_counts_from_headers_agree_with_the_pipeline() -> None:
    """`count_tokens` reads only the headers (through the plan of each size); `process`
    decodes: the prompt length and each item's span agree, and both are
    `Gemma4Processor._get_num_multimodal_tokens`'."""
    sizes = [(700, 500), (2000, 30), (300, 300), (1, 1), (4032, 3024), (48, 20000)]
    images = [_png(noise(w, h, k)) for k, (w, h) in enumerate(sizes)]
    prompt = [2, *[tok for _ in sizes for tok in (258880, 1000)]]
    with mm.pipeline_from_spec({"family": "gemma4", "params": {}}) as pipe:
        req = mm.MmInput(input_ids=prompt, images=images)
        count = pipe.count_tokens(req)
        out = pipe.process(req)
    assert count.length == len(out.input_ids)
    assert count.per_item == [e - s + 1 for s, e in out.offsets]
    hf = processor()._get_num_multimodal_tokens(image_sizes=[(h, w) for w, h in sizes])
    assert count.per_item == hf["num_image_tokens"]


def test_videos_without_the_tokenizer_are_refused_naming_it() -> None:
    """A video's timestamps are the model tokenizer's text: without the param, no video."""
    from sglang_mm_core.conformance.video import make_clip

    with mm.pipeline_from_spec({"family": "gemma4", "params": {}}) as pipe:
        with pytest.raises(mm.UnsupportedModalityError, match="set the spec param 'tokenizer'"):
            pipe.process(
                mm.MmInput(input_ids=[2, 258884, 3], videos=[make_clip("libx264", 64, 48, 3)])
            )
