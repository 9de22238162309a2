"""The plan against the reference's own geometry functions (SGLang's module, see
_dsv41_refs.py): every size of a sweep under several configs gives the reference's
``(n_llm_h, n_llm_w, best_height, best_width)``, its token count, and ``ImageOps.pad``'s
paste geometry; the prompt expands as SGLang's processor expands it; token counts from
headers agree with the full pipeline; what the reference cannot plan is a typed error."""

from __future__ import annotations

import io
import itertools

import numpy as np
import pytest
from _dsv41_corpus import case_args
from _dsv41_refs import args, expand_prompt, reference
from PIL import Image
from sglang_mm_deepseek_v41 import DeepseekV41Family, plan_grid
from test_dsv41_parity import params_of

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.plugin import KernelArgumentError, LayoutError

CONFIGS = {
    "default": {},
    "ratio-2": {"vision_max_wh_ratio": 2},
    "ratio-2.5": {"vision_max_wh_ratio": 2.5},
    "small-budget": {"vision_max_n_token": 64, "vision_min_pixels": 10000},
    "patch16-d2": {"vision_patch_size": 16, "vision_downsample_ratio": 2},
    "no-min": {"vision_min_pixels": 0, "vision_max_n_token": 4},
}
SIDES = [1, 2, 3, 13, 14, 15, 41, 42, 43, 97, 300, 541, 542, 543, 1023, 1561, 2048, 4001, 9000]


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_plan_is_the_references(config: str) -> None:
    flat = case_args(CONFIGS[config])
    a = args(**flat)
    ref = reference()
    fam = DeepseekV41Family(params_of(flat))
    for w, h in itertools.product(SIDES, SIDES):
        lh, lw, bh, bw = ref.plan_image_grid(w, h, a)
        g = plan_grid(w, h, fam.params)
        assert (g.n_llm_h, g.n_llm_w, g.height, g.width) == (lh, lw, bh, bw), (w, h)
        assert g.tokens == ref.num_image_tokens(lh, lw) <= flat["vision_max_n_token"]
        if w * h <= 1 << 20:  # prepare_image copies the pixels out: keep it cheap
            _, plan, plh, plw = ref.prepare_image(Image.new("RGB", (w, h)), a)
            assert (plh, plw) == (lh, lw)
            rh, rw = plan["resize_h"], plan["resize_w"]
            assert g.content == (rw, rh), (w, h)
            if (rw, rh) != (bw, bh):  # prepare_image centres the paste as ImageOps.pad does
                assert g.at == (plan["left"], plan["top"]), (w, h)
        plan_ = fam.plan(w, h)
        p = flat["vision_patch_size"]
        assert plan_.length == g.tokens and plan_.geometry.grid == (bh // p, bw // p)


def test_prompt_expands_as_sglangs_processor() -> None:
    data = [_png(640, 480), _png(100, 2000), _png(3000, 40)]
    ids = [0, 5, 129264, 7, 129264, 129264, 9]
    pipe = pipeline_from_spec({"family": "deepseek_v41", "params": {}, "threads": 1})
    out = pipe.process(MmInput(input_ids=ids, images=data))
    grids = []
    for d in data:
        with Image.open(io.BytesIO(d)) as im:
            lh, lw, _, _ = reference().plan_image_grid(*im.size, args(**case_args({})))
        grids.append((lh, lw))
    tokens, offsets = expand_prompt(ids, 129264, grids)
    np.testing.assert_array_equal(out.input_ids, tokens)
    assert list(out.offsets) == offsets
    for item, (s, e) in zip(out.items, offsets, strict=True):
        assert item.tokens == e - s + 1 == item.aux["image_token_types"].array.size
    counted = pipe.count_tokens(MmInput(input_ids=ids, images=data))
    assert counted.length == len(tokens)
    assert counted.per_item == [e - s + 1 for s, e in offsets]
    with pytest.raises(LayoutError):
        pipe.process(MmInput(input_ids=ids, images=data[:2]))


def _png(w: int, h: int) -> bytes:
    buf = io.BytesIO()
    rng = np.random.default_rng(w * 7 + h)
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def test_a_plan_the_reference_crashes_on_is_a_typed_error() -> None:
    """A ratio so small that the upscaled width truncates to 0: the reference divides by it
    (``ZeroDivisionError`` in ``solve_resize_ratio``); the family names the size."""
    a = args(**case_args({"vision_max_wh_ratio": 1e-9}))
    with pytest.raises(ZeroDivisionError):
        reference().plan_image_grid(100, 100, a)
    fam = DeepseekV41Family({"max_wh_ratio": 1e-9})
    with pytest.raises(KernelArgumentError, match=r"100x100 image .* no area"):
        fam.plan(100, 100)
