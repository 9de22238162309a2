"""The prompt expansion against HF's `InternVLProcessor` (on a tokenizer built here from the
real special-token ids of InternVL 3 and 3.5): each `<IMG_CONTEXT>` becomes `<img>`, 256
context tokens per tile, `</img>`, as an `Explicit` pattern whose content range (the item's
offsets) covers the context tokens only; the pixel values HF returns for the whole prompt are
our items' features in order. A placeholder count that disagrees with the images is a
`LayoutError`, both when laying out and when counting."""

from __future__ import annotations

import numpy as np
import pytest
from _internvl_refs import TOKENS_3, TOKENS_3_5, as_bits, internvl_processor, noise, photo
from sglang_mm_internvl import INTERNVL3, INTERNVL3_5, InternVLFamily, InternVLParams

from sglang_mm_core import pipeline_from_spec
from sglang_mm_core.errors import LayoutError
from sglang_mm_core.plugin import Explicit

GENERATIONS = [("internvl3", INTERNVL3, TOKENS_3), ("internvl3_5", INTERNVL3_5, TOKENS_3_5)]


def _images():
    return [photo("chelsea.png"), noise(1, 700, seed=2), photo("camera.png")]


@pytest.mark.parametrize(("name", "params", "tokens"), GENERATIONS, ids=[g[0] for g in GENERATIONS])
def test_expansion_matches_internvl_processor(name, params, tokens):
    proc = internvl_processor(tokens)
    fam = InternVLFamily(InternVLParams(**params, resample="pil"))
    images = _images()
    text = "w1 w2 <IMG_CONTEXT> w3 <IMG_CONTEXT> <IMG_CONTEXT> w4"
    hf = proc(text=[text], images=images, return_tensors="np")
    want_ids = np.asarray(hf["input_ids"][0], dtype=np.int64)

    prompt = np.asarray(proc.tokenizer(text)["input_ids"], dtype=np.int64)
    assert np.count_nonzero(prompt == fam.params.image_token_id) == 3
    items = [fam.process_item(np.asarray(im)) for im in images]
    expanded = fam.expand(prompt, [it.plan for it in items])
    np.testing.assert_array_equal(expanded.input_ids, want_ids)

    # offsets: exactly each item's run of context tokens, markers outside
    ctx, start, end = tokens["<IMG_CONTEXT>"], tokens["<img>"], tokens["</img>"]
    for (s, e), it in zip(expanded.offsets, items, strict=True):
        assert want_ids[s - 1] == start and want_ids[e + 1] == end
        assert np.all(want_ids[s : e + 1] == ctx)
        assert e - s + 1 == it.plan.content == 256 * it.feature.shape[0]
    assert sum(e - s + 1 for s, e in expanded.offsets) == np.count_nonzero(want_ids == ctx)

    # the patterns: Explicit with the content range
    for it in items:
        assert isinstance(it.plan.tokens, Explicit)
        n = it.plan.content
        assert it.plan.tokens.content == (1, n + 1) and len(it.plan.tokens.ids) == n + 2

    # HF's pixel_values for the prompt are our features, in prompt order
    ours = np.concatenate([it.feature.array for it in items])
    np.testing.assert_array_equal(as_bits(ours), as_bits(np.asarray(hf["pixel_values"])))


def test_placeholder_count_mismatch_is_a_layout_error():
    fam = InternVLFamily()
    img = fam.params.image_token_id
    items = [fam.process_item(np.asarray(noise(40, 30)))] * 2
    plans = [it.plan for it in items]
    with pipeline_from_spec({"family": "internvl"}) as pipe:
        for ids in ([1, img, 2], [1, img, img, img, 2], [1, 2]):
            with pytest.raises(LayoutError, match=r"media placeholder\(s\) but 2 media item"):
                fam.expand(np.asarray(ids, dtype=np.int64), plans)
            with pytest.raises(LayoutError, match=r"media placeholder\(s\) but 2 media item"):
                pipe.check_prompt(np.asarray(ids, dtype=np.int64), 2)
        pipe.check_prompt(np.asarray([1, img, img, 2], dtype=np.int64), 2)


def test_example_prompt_is_the_placeholder_form():
    fam = InternVLFamily(InternVLParams(**INTERNVL3_5))
    ids = fam.example_prompt(2)
    assert ids.count(151671) == 2 and 151669 not in ids and 151670 not in ids
