"""The grid choice against HF's own ``get_optimal_tiled_canvas`` and
``get_number_of_image_patches`` (both backends share them), over a sweep of sizes, the tie
cases in both directions and every ``min_patches`` / ``max_patches`` pair up to 12; and
the plan's token counts against ``InternVLProcessor``'s own count."""

from __future__ import annotations

import itertools

import pytest
from _internvl_refs import TOKENS_3, internvl_processor
from sglang_mm_internvl import InternVLFamily
from sglang_mm_internvl.tiling import best_grid, candidates, tiling
from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
    GotOcr2ImageProcessorPil,
    get_all_supported_aspect_ratios,
    get_optimal_tiled_canvas,
)

from sglang_mm_core.errors import MmRequestError

T = 448
# Sizes: tiny, one tile, extreme aspect ratios, photos, and the tie boundaries: equal ratios
# (1x1 / 2x2 / 3x3 for squares, 2x1 / 4x2 for 2:1, 1x2 / 2x4 for 1:2) flip to the larger grid
# once the image area exceeds half of it, and 3:2 / 3:4 sit midway between two grid ratios.
SIZES = [
    (1, 1),
    (1, 2000),
    (2000, 1),
    (300, 200),
    (448, 448),
    (633, 633),
    (634, 634),
    (950, 950),
    (951, 951),
    (633, 1267),
    (634, 1268),
    (1267, 633),
    (1268, 634),
    (896, 1792),
    (1792, 896),
    (600, 400),
    (546, 364),
    (549, 366),
    (400, 600),
    (384, 512),
    (390, 520),
    (1920, 1080),
    (1080, 1920),
    (4000, 3000),
    (640, 427),
    (427, 640),
    (451, 300),
    (5000, 10),
    (10, 5000),
]


def _hf_area_threshold_sizes() -> list[tuple[int, int]]:
    """Images just below and above each area at which an equal-ratio tie flips."""
    out = []
    for n in (1, 2, 3):
        for k, (a, b) in itertools.product((1, 2), ((1, 1), (2, 1), (1, 2))):
            w, h = a * n * T * k // 2, b * n * T * k // 2
            out += [(w, h), (w + a, h + b), (max(w - a, 1), max(h - b, 1))]
    return out


# Every valid bound pair (min_patches above max_patches is refused at spec time).
BOUNDS = [(lo, hi) for lo in (1, 2, 3, 6) for hi in range(1, 13) if lo <= hi]


@pytest.mark.parametrize(("min_patches", "max_patches"), BOUNDS)
def test_grid_matches_hf(min_patches, max_patches):
    for w, h in SIZES + _hf_area_threshold_sizes():
        want = get_optimal_tiled_canvas((h, w), (T, T), min_patches, max_patches)
        assert best_grid(w, h, T, min_patches, max_patches, "hf") == want, (w, h)
        hf = GotOcr2ImageProcessorPil(
            size={"height": T, "width": T},
            crop_to_patches=True,
            min_patches=min_patches,
            max_patches=max_patches,
        )
        got = tiling(
            w,
            h,
            tile=T,
            crop_to_patches=True,
            min_patches=min_patches,
            max_patches=max_patches,
            rule="hf",
        )
        assert got.tiles == hf.get_number_of_image_patches(h, w), (w, h)


def test_candidate_order_is_hfs():
    for lo, hi in itertools.product(range(1, 13), range(1, 13)):
        if lo <= hi:
            assert list(candidates(lo, hi, "hf")) == get_all_supported_aspect_ratios(lo, hi)


def test_ties_go_both_ways():
    """The sweep above holds ties, and each flips: one size keeps the smaller grid, the next
    takes the larger, for squares, 2:1 and 1:2 alike, and for the 3:2 / 3:4 midpoints."""
    pick = lambda w, h, hi=12: best_grid(w, h, T, 1, hi, "hf")  # noqa: E731
    assert (pick(633, 633), pick(634, 634)) == ((1, 1), (2, 2))
    assert (pick(950, 950), pick(951, 951)) == ((2, 2), (3, 3))
    assert (pick(1267, 633), pick(1268, 634)) == ((2, 1), (4, 2))
    assert (pick(633, 1267), pick(634, 1268)) == ((1, 2), (2, 4))
    assert (pick(546, 364, 4), pick(549, 366, 4)) == ((1, 1), (2, 1))
    assert (pick(384, 512, 4), pick(390, 520, 4)) == ((1, 1), (1, 2))


def test_plan_token_counts_match_internvl_processor():
    proc = internvl_processor(TOKENS_3)
    fam = InternVLFamily()
    sizes = SIZES + _hf_area_threshold_sizes()
    want = proc._get_num_multimodal_tokens(image_sizes=[(h, w) for w, h in sizes])
    for (w, h), n_tokens, n_tiles in zip(
        sizes, want.num_image_tokens, want.num_image_patches, strict=True
    ):
        assert fam.plan(w, h).content == 256 * n_tiles, (w, h)
        assert fam.plan(w, h).length == n_tokens, (w, h)


def test_without_cropping_or_with_one_tile_it_is_one_tile():
    for w, h in SIZES:
        for crop, hi in ((False, 12), (True, 1)):
            t = tiling(w, h, tile=T, crop_to_patches=crop, min_patches=1, max_patches=hi, rule="hf")
            assert (t.cols, t.rows, t.thumbnail, t.tiles) == (1, 1, False, 1)


def test_model_card_rule_sweep_is_consistent():
    """The model card's candidates are the same grids in another order; its choice is a grid
    of the allowed tile counts whose ratio is as close as HF's choice."""
    for lo, hi in ((1, 12), (1, 6), (2, 12)):
        assert sorted(candidates(lo, hi, "model_card")) == sorted(candidates(lo, hi, "hf"))
        for w, h in SIZES:
            a = best_grid(w, h, T, lo, hi, "model_card")
            b = best_grid(w, h, T, lo, hi, "hf")
            assert abs(w / h - a[0] / a[1]) == abs(w / h - b[0] / b[1]), (w, h)


@pytest.mark.parametrize(("w", "h"), [(0, 5), (5, 0)])
def test_zero_side_is_a_request_error(w, h):
    with pytest.raises(MmRequestError, match="zero"):
        InternVLFamily().plan(w, h)
