"""Layout (placeholder expansion, strict vision markers) and MRoPE positions: the spec's worked
examples, and HuggingFace's `get_rope_index` captured in fixtures/rope_goldens.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sglang_mm_qwen_vl import QwenVLFamily, QwenVLParams

from sglang_mm_core.errors import LayoutError
from sglang_mm_core.plugin import Geometry, Plan, Repeat

ROPE = json.loads((Path(__file__).parent / "fixtures" / "rope_goldens.json").read_text())
IMG, VS, VE = 151655, 151652, 151653


def geo(gh: int, gw: int, ps: int = 14) -> Geometry:
    """The geometry process_item reports for an unmerged patch grid (1, gh, gw)."""
    return Geometry(gh * ps, gw * ps, (1, gh, gw))


def plan(fam: QwenVLFamily, gh: int, gw: int) -> Plan:
    """The family's plan for an image already at the size of the unmerged grid (gh, gw)."""
    got = fam.plan(gw * 14, gh * 14)
    assert got.geometry == geo(gh, gw)
    return got


def bare(n: int) -> list[Plan]:
    """``n`` one-token plans, for the placeholder rules alone."""
    return [Plan(Repeat(IMG, 1), geo(2, 2))] * n


def run(fam: QwenVLFamily, ids: list[int], grids: list[tuple[int, int]]):
    plans = [plan(fam, h, w) for h, w in grids]
    expanded = fam.expand(np.asarray(ids, dtype=np.int64), plans)
    geos = [p.geometry for p in plans]
    pos = fam.positions(len(expanded.input_ids), expanded.offsets, geos, expanded.input_ids)
    return plans, expanded, pos


def test_spec_example_one_image():
    ids = [1, 2, 3, VS, IMG, VE, 4, 5]
    plans, ex, pos = run(QwenVLFamily(), ids, [(4, 4)])
    assert plans[0].tokens == Repeat(IMG, 4)
    np.testing.assert_array_equal(ex.input_ids, [1, 2, 3, VS, IMG, IMG, IMG, IMG, VE, 4, 5])
    assert ex.offsets == [(4, 7)]
    want = [
        [0, 1, 2, 3, 4, 4, 4, 4, 6, 7, 8],
        [0, 1, 2, 3, 4, 4, 5, 5, 6, 7, 8],
        [0, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8],
    ]
    np.testing.assert_array_equal(pos.positions, np.array(want, dtype=np.int64))
    assert pos.positions.dtype == np.int64 and pos.delta == -2


def test_spec_example_two_images():
    ids = [1, VS, IMG, VE, VS, IMG, VE, 2]
    _, ex, pos = run(QwenVLFamily(), ids, [(4, 4), (4, 6)])
    want = [
        [0, 1, 2, 2, 2, 2, 4, 5, 6, 6, 6, 6, 6, 6, 9, 10],
        [0, 1, 2, 2, 3, 3, 4, 5, 6, 6, 6, 7, 7, 7, 9, 10],
        [0, 1, 2, 3, 2, 3, 4, 5, 6, 7, 8, 6, 7, 8, 9, 10],
    ]
    np.testing.assert_array_equal(pos.positions, np.array(want))
    assert pos.delta == -5
    assert ex.offsets == [(2, 5), (8, 13)]


@pytest.mark.parametrize("case", ROPE["cases"], ids=[c["id"] for c in ROPE["cases"]])
def test_hf_get_rope_index(case):
    fam = QwenVLFamily()
    grids = [(g[1], g[2]) for g in case["grids"]]
    assert all(g[0] == 1 for g in case["grids"])
    _, ex, pos = run(fam, case["ids"], grids)
    np.testing.assert_array_equal(ex.input_ids, np.array(case["expanded"], dtype=np.int64))
    np.testing.assert_array_equal(pos.positions, np.array(case["positions"], dtype=np.int64))
    assert pos.delta == case["delta"]
    # offsets: each item's run of image tokens, in order
    where = np.flatnonzero(ex.input_ids == IMG)
    starts = [s for s, _ in ex.offsets]
    ends = [e for _, e in ex.offsets]
    assert starts[0] == where[0] and ends[-1] == where[-1]
    assert sum(e - s + 1 for s, e in ex.offsets) == len(where)
    for (s, e), (h, w) in zip(ex.offsets, grids, strict=True):
        assert e - s + 1 == h * w // 4
        assert np.all(ex.input_ids[s : e + 1] == IMG)


def test_rope_goldens_came_from_the_hf_models():
    assert "Qwen2VLModel" in ROPE["reference"] and "Qwen3VLModel" in ROPE["reference"]
    assert ROPE["torch"] and ROPE["transformers"]


def test_count_mismatch_is_a_layout_error():
    fam = QwenVLFamily()
    four = plan(fam, 4, 4)
    with pytest.raises(LayoutError, match=r"prompt has 1 media placeholder\(s\) but 2 media"):
        fam.expand(np.array([1, VS, IMG, VE]), [four, four])
    with pytest.raises(LayoutError, match=r"prompt has 2 media placeholder\(s\) but 1 media"):
        fam.expand(np.array([VS, IMG, VE, VS, IMG, VE]), [four])
    with pytest.raises(LayoutError, match=r"prompt has 0 media placeholder\(s\) but 1 media"):
        fam.expand(np.array([1, 2, 3]), [four])


@pytest.mark.parametrize(
    ("ids", "bad"),
    [
        ([1, IMG, VE], 0),  # no vision_start
        ([VS, IMG, 2], 0),  # no vision_end
        ([IMG], 0),  # nothing around it
        ([VS, IMG, VE, 5, IMG, VE], 1),  # the second one is bare on the left
        ([VS, IMG, VE, VS, IMG], 1),  # the second one ends the prompt
        ([VE, IMG, VS], 0),  # markers swapped
    ],
)
def test_strict_layout_refuses_unmarked_placeholders(ids, bad):
    n = ids.count(IMG)
    with pytest.raises(LayoutError, match=rf"media placeholder {bad} \(token \d+, id {IMG}\)"):
        QwenVLFamily().expand(np.array(ids), bare(n))
    relaxed = QwenVLFamily(QwenVLParams(strict_layout=False))
    assert len(relaxed.expand(np.array(ids), bare(n)).input_ids) == len(ids)


def test_strict_layout_uses_the_configured_ids():
    q35 = QwenVLFamily(
        QwenVLParams(
            image_token_id=248056, vision_start_token_id=248053, vision_end_token_id=248054
        )
    )
    four = plan(q35, 4, 4)
    assert four.tokens == Repeat(248056, 4)
    assert q35.expand(np.array([7, 248053, 248056, 248054]), [four]).offsets == [(2, 5)]
    with pytest.raises(LayoutError, match="between ids 248053 and 248054"):
        q35.expand(np.array([7, VS, 248056, VE]), [four])


def test_text_only_prompt_positions_are_plain():
    fam = QwenVLFamily()
    _, _, pos = run(fam, [5, 6, 7], [])
    np.testing.assert_array_equal(pos.positions, np.tile(np.arange(3), (3, 1)))
    assert pos.delta == 0


def test_plan_tokens_are_the_merged_grid():
    fam = QwenVLFamily()
    assert plan(fam, 34, 46).tokens == Repeat(IMG, 34 * 46 // 4)
    q = QwenVLFamily(QwenVLParams(merge_size=1))
    got = q.plan(15 * 14, 3 * 14)
    assert got.geometry == geo(3, 15) and got.tokens == Repeat(IMG, 45)


def test_example_prompt_is_strict_valid():
    fam = QwenVLFamily()
    ids = fam.example_prompt(3)
    assert len(fam.expand(np.array(ids), bare(3)).offsets) == 3
