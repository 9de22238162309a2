"""apply_layout and layout_by_placeholder: every layout rule and vector (docs/plugins.md)."""

from __future__ import annotations

import numpy as np
import pytest

from sglang_mm_core import LayoutError
from sglang_mm_core._layout import (
    Media,
    Text,
    TokenLayout,
    apply_layout,
    layout_by_placeholder,
    layout_by_placeholder_patterns,
)
from sglang_mm_core.plugin import Explicit, Repeat


def test_kernels_md_vector() -> None:
    layout = layout_by_placeholder([7, 1, 8, 1, 9], 1, [2, 3])
    out = apply_layout([7, 1, 8, 1, 9], layout, 2)
    assert out.input_ids.dtype == np.int64
    assert out.input_ids.tolist() == [7, 1, 1, 8, 1, 1, 1, 9]
    assert out.offsets == [(1, 2), (4, 6)]


def test_design_md_example() -> None:
    a, pad, b = 10, 99, 11
    layout = TokenLayout([Text(0, 1), Media(0, Repeat(pad, 4)), Text(2, 3)])
    out = apply_layout([a, pad, b], layout, 1)
    assert out.input_ids.tolist() == [a, pad, pad, pad, pad, b]
    assert out.offsets == [(1, 4)]


def test_placeholder_layout_segments() -> None:
    layout = layout_by_placeholder([1, 7, 1], 1, [1, 2])
    assert layout.segments == (Media(0, Repeat(1, 1)), Text(1, 2), Media(1, Repeat(1, 2)))


def test_explicit_content_range_excludes_wrappers() -> None:
    # <img>=3, </img>=4, content 5; prompt "9 <ph> 9 <ph>"
    patterns = [Explicit((3, 5, 5, 4), content=(1, 3)), Explicit((3, 5, 4), content=(1, 2))]
    layout = layout_by_placeholder_patterns([9, 5, 9, 5], 5, patterns)
    out = apply_layout([9, 5, 9, 5], layout, 2)
    assert out.input_ids.tolist() == [9, 3, 5, 5, 4, 9, 3, 5, 4]
    assert out.offsets == [(2, 3), (7, 7)]


def test_explicit_without_content_spans_all() -> None:
    layout = TokenLayout([Text(0, 1), Media(0, Explicit((20, 21, 22)))])
    out = apply_layout([9, 5], layout, 1)
    assert out.input_ids.tolist() == [9, 20, 21, 22]
    assert out.offsets == [(1, 3)]


def test_items_may_be_placed_out_of_order() -> None:
    layout = TokenLayout([Media(1, Repeat(5, 2)), Media(0, Repeat(5, 1))])
    out = apply_layout([5, 5], layout, 2)
    assert out.offsets == [(2, 2), (0, 1)]


def test_text_only() -> None:
    out = apply_layout([1, 2, 3], TokenLayout([Text(0, 3)]), 0)
    assert out.input_ids.tolist() == [1, 2, 3] and out.offsets == []


@pytest.mark.parametrize(
    ("layout", "n_items", "message"),
    [
        (TokenLayout([Text(0, 1), Media(0, Repeat(1, 0)), Text(2, 3)]), 1, "at least one"),
        (TokenLayout([Text(0, 1), Media(1, Repeat(1, 2)), Text(2, 3)]), 1, "has 1"),
        (TokenLayout([Media(0, Repeat(1, 2)), Media(0, Repeat(1, 2)), Text(2, 3)]), 1, "twice"),
        (TokenLayout([Text(0, 1), Text(2, 3)]), 0, "must start at token 1"),
        (TokenLayout([Text(0, 2), Text(1, 3)]), 0, "must start at token 2"),
        (TokenLayout([Text(0, 4)]), 0, "within the 3"),
        (TokenLayout([Text(0, 2)]), 0, "unconsumed"),
        (TokenLayout([Text(0, 1), Media(0, Repeat(1, 2)), Text(2, 3)]), 2, "never places"),
        (TokenLayout([Text(0, 3), Media(0, Repeat(1, 2))]), 1, "no placeholder"),
        (TokenLayout([Text(0, 1), Media(0, Explicit((1, 2), (1, 1))), Text(2, 3)]), 1, "empty"),
        (TokenLayout([Text(0, 1), Media(0, Explicit((1, 2), (0, 3))), Text(2, 3)]), 1, "outside"),
        (TokenLayout([Text(0, 1), Media(0, Explicit(())), Text(2, 3)]), 1, "empty"),
    ],
)
def test_invalid_layouts(layout: TokenLayout, n_items: int, message: str) -> None:
    with pytest.raises(LayoutError, match=message):
        apply_layout([7, 1, 8], layout, n_items)


@pytest.mark.parametrize(("ids", "counts"), [([7, 1, 8, 1, 9], [2, 3, 1]), ([7, 1, 8], [])])
def test_placeholder_count_mismatch(ids: list[int], counts: list[int]) -> None:
    want = f"prompt has {ids.count(1)} media placeholder\\(s\\) but {len(counts)} media item"
    with pytest.raises(LayoutError, match=want):
        layout_by_placeholder(ids, 1, counts)


def test_random_layouts_against_naive_expansion() -> None:
    """Independent expansion: walk the prompt, replace each placeholder by its run."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        ids = rng.integers(2, 6, n).tolist()
        counts = rng.integers(1, 5, ids.count(2)).tolist()
        out = apply_layout(ids, layout_by_placeholder(ids, 2, counts), len(counts))
        want: list[int] = []
        offsets = []
        k = 0
        for t in ids:
            if t == 2:
                offsets.append((len(want), len(want) + counts[k] - 1))
                want += [2] * counts[k]
                k += 1
            else:
                want.append(t)
        assert out.input_ids.tolist() == want
        assert out.offsets == offsets


def test_placeholder_layouts_expand_like_their_segments() -> None:
    """`layout_by_placeholder`'s compact form (expanded natively) and the same segments
    given explicitly (the general path) agree, from lists and from arrays."""
    rng = np.random.default_rng(2)
    for _ in range(200):
        ids = rng.integers(2, 6, int(rng.integers(1, 40)))
        counts = rng.integers(1, 5, int((ids == 2).sum())).tolist()
        fast = layout_by_placeholder(ids, 2, counts)
        general = TokenLayout(list(fast.segments))
        for src in (ids, ids.tolist(), ids.astype(np.int32)):
            a = apply_layout(src, fast, len(counts))
            b = apply_layout(src, general, len(counts))
            assert a.input_ids.dtype == b.input_ids.dtype == np.int64
            np.testing.assert_array_equal(a.input_ids, b.input_ids)
            assert a.offsets == b.offsets


@pytest.mark.parametrize(
    ("ids", "counts", "apply_to", "n_items", "message"),
    [
        ([7, 1, 8], [0], [7, 1, 8], 1, "at least one"),
        ([7, 1, 8], [-2], [7, 1, 8], 1, "at least one"),
        ([7, 1, 8], [2], [7, 1, 8, 9], 1, "unconsumed"),
        ([7, 1, 8], [2], [7, 1], 1, "within the 2"),
        ([7, 1, 8], [2], [7, 1, 8], 2, "never places"),
        ([7, 1, 8], [2], [7, 1, 8], 0, "has 0"),
    ],
)
def test_placeholder_layouts_refused_like_their_segments(
    ids: list[int], counts: list[int], apply_to: list[int], n_items: int, message: str
) -> None:
    fast = layout_by_placeholder(ids, 1, counts)
    for layout in (fast, TokenLayout(list(fast.segments))):
        with pytest.raises(LayoutError, match=message):
            apply_layout(apply_to, layout, n_items)


def test_token_layout_is_an_immutable_value() -> None:
    import pickle

    fast = layout_by_placeholder([7, 1, 8], 1, [2])
    general = TokenLayout([Text(0, 1), Media(0, Repeat(1, 2)), Text(2, 3)])
    assert fast == general and hash(fast) == hash(general)
    assert repr(fast) == repr(general)
    assert pickle.loads(pickle.dumps(fast)) == general
    assert fast != TokenLayout([Text(0, 1), Media(0, Repeat(1, 3)), Text(2, 3)])
    with pytest.raises(AttributeError, match="immutable"):
        fast.segments = ()  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        general.x = 1  # type: ignore[attr-defined]


def test_placeholder_indices() -> None:
    from sglang_mm_core._layout import placeholder_indices

    assert placeholder_indices([1, 5, 1, 1], 1) == [0, 2, 3]
    assert placeholder_indices(np.array([[1, 5], [1, 1]]), 1) == [0, 2, 3]
    assert placeholder_indices([1, 5], 2**70) == []
    assert placeholder_indices(np.arange(1 << 16), 40000) == [40000]


def test_placeholders_between_markers() -> None:
    ids = [1, 5, 9, 6, 2, 5, 9, 6]
    layout = layout_by_placeholder(ids, 9, [2, 3], between=(5, 6))
    assert apply_layout(ids, layout, 2).offsets == [(2, 3), (7, 9)]
    for bad, k in (([1, 5, 9, 6, 2, 9, 6], 1), ([9, 6], 0), ([5, 9], 0), ([5, 9, 7], 0)):
        with pytest.raises(LayoutError, match=rf"media placeholder {k} \(token .* not directly"):
            layout_by_placeholder(bad, 9, [1] * bad.count(9), between=(5, 6))
    with pytest.raises(LayoutError, match="placeholder 0"):
        layout_by_placeholder([5, 9, 6], 9, [1], between=(5, 2**70))
    with pytest.raises(LayoutError, match="1 media placeholder"):  # the count is checked first
        layout_by_placeholder([1, 9, 2], 9, [1, 1], between=(5, 6))


def test_explicit_replacing_its_markers() -> None:
    """``replaces_markers``: the ids take the placeholder and its two markers (1 ... 2), so
    they may begin before the opening marker and write their own."""
    start, end, ph = 1, 2, 5
    prompt = [9, start, ph, end, 8, start, ph, end]
    wide = Explicit(
        (30, start, 5, 5, end, 31, start, 5, end), content=(2, 8), replaces_markers=True
    )
    narrow = Explicit((5, 5), content=None)
    layout = layout_by_placeholder_patterns(prompt, ph, [wide, narrow], between=(start, end))
    assert layout.segments == (Text(0, 1), Media(0, wide), Text(4, 6), Media(1, narrow), Text(7, 8))
    out = apply_layout(prompt, layout, 2)
    assert out.input_ids.tolist() == [9, 30, 1, 5, 5, 2, 31, 1, 5, 2, 8, 1, 5, 5, 2]
    assert out.offsets == [(3, 8), (12, 13)]
    from sglang_mm_core._layout import replaced_tokens
    from sglang_mm_core.plugin import Geometry, Plan

    assert [replaced_tokens(p) for p in (wide, narrow, Repeat(5, 2))] == [3, 1, 1]
    plans = [Plan(p, Geometry(1, 1, (1,))) for p in (wide, narrow)]
    assert len(prompt) + sum(p.length - p.replaces for p in plans) == len(out.input_ids)


def test_explicit_replacing_markers_needs_them() -> None:
    wide = Explicit((30, 5, 31), replaces_markers=True)
    with pytest.raises(LayoutError, match="has none"):
        layout_by_placeholder_patterns([9, 1, 5, 2], 5, [wide])
    with pytest.raises(LayoutError, match="not directly between"):
        layout_by_placeholder_patterns([9, 5, 2], 5, [wide], between=(1, 2))
    with pytest.raises(LayoutError, match="no placeholder token left"):
        apply_layout([9, 5], TokenLayout([Text(0, 1), Media(0, wide)]), 1)
