"""The core's plugin conformance suite, for this family under InternVL 3's and 3.5's params,
both resamplers and the model card's tiling (fewer tiles on the extra targets, to keep the
suite quick: the tile count changes no code path)."""

from __future__ import annotations

from sglang_mm_internvl import INTERNVL3_5, InternVLFamily

from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

INTERNVL3_5_PIL = ConformanceTarget.from_family(
    InternVLFamily, {**INTERNVL3_5, "resample": "pil", "max_patches": 4}
)
INTERNVL3_5_PIL.id = "internvl[internvl3_5,pil]"
MODEL_CARD = ConformanceTarget.from_family(
    InternVLFamily, {"resample": "pil", "tiling": "model_card", "max_patches": 4}
)
MODEL_CARD.id = "internvl[model_card]"
TARGETS = [InternVLFamily, INTERNVL3_5_PIL, MODEL_CARD]


@parametrize_with_checks(TARGETS)
def test_conformance(target, check):
    check(target)
