"""Rope1D and the image-only MRoPE helper: the worked examples of docs/families/qwen_vl.md, then
random layouts against a straightforward loop written from the spec's algorithm."""

from __future__ import annotations

import numpy as np
import pytest

from sglang_mm_core import LayoutError, MRope, Rope1D
from sglang_mm_core._positions import _mrope_positions_py
from sglang_mm_core.plugin import mrope_positions


def test_qwen_vl_md_one_image() -> None:
    # ids T T T VS I I I I VE T T, merged grid (1, 2, 2) from (1, 4, 4) patches
    got = mrope_positions(11, [(4, 7)], [(1, 2, 2)])
    want = np.array(
        [
            [0, 1, 2, 3, 4, 4, 4, 4, 6, 7, 8],
            [0, 1, 2, 3, 4, 4, 5, 5, 6, 7, 8],
            [0, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8],
        ],
        dtype=np.int64,
    )
    assert got.positions.dtype == np.int64
    np.testing.assert_array_equal(got.positions, want)
    assert got.delta == -2


def test_qwen_vl_md_two_images() -> None:
    # ids T VS I*4 VE VS I*6 VE T, merged grids (1, 2, 2) and (1, 2, 3)
    got = mrope_positions(16, [(2, 5), (8, 13)], [(1, 2, 2), (1, 2, 3)])
    want = np.array(
        [
            [0, 1, 2, 2, 2, 2, 4, 5, 6, 6, 6, 6, 6, 6, 9, 10],
            [0, 1, 2, 2, 3, 3, 4, 5, 6, 6, 6, 7, 7, 7, 9, 10],
            [0, 1, 2, 3, 2, 3, 4, 5, 6, 7, 8, 6, 7, 8, 9, 10],
        ],
        dtype=np.int64,
    )
    np.testing.assert_array_equal(got.positions, want)
    assert got.delta == -5


def naive_mrope(length: int, offsets: list[tuple[int, int]], grids: list[tuple[int, int, int]]):
    """The spec's algorithm, token by token."""
    pos = np.zeros((3, length), dtype=np.int64)
    nxt = 0
    i = 0
    starts = {s: (s, e, g) for (s, e), g in zip(offsets, grids, strict=True)}
    while i < length:
        if i in starts:
            s, _, (t, h, w) = starts[i]
            for ti in range(t):
                for hi in range(h):
                    for wi in range(w):
                        k = s + (ti * h + hi) * w + wi
                        pos[:, k] = (nxt + ti, nxt + hi, nxt + wi)
            nxt += max(t, h, w)
            i += t * h * w
        else:
            pos[:, i] = nxt
            nxt += 1
            i += 1
    return pos, int(pos.max()) + 1 - length


@pytest.mark.parametrize("impl", ["native", "numpy"])
def test_random_against_naive(impl: str) -> None:
    """Both walks (the native one `mrope_positions` runs, and the numpy one it falls back to
    for blocks that do not fit) against the spec's loop; offsets in any order."""
    fn = mrope_positions if impl == "native" else _mrope_positions_py
    rng = np.random.default_rng(1)
    for _ in range(200):
        offsets, grids, cursor = [], [], int(rng.integers(0, 5))
        for _ in range(int(rng.integers(0, 4))):
            g = (int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.integers(1, 6)))
            n = g[0] * g[1] * g[2]
            offsets.append((cursor, cursor + n - 1))
            grids.append(g)
            cursor += n + int(rng.integers(0, 4))
        length = max(cursor, 1)
        order = rng.permutation(len(offsets))
        got = fn(length, [offsets[k] for k in order], [grids[k] for k in order])
        want, delta = naive_mrope(length, offsets, grids)
        np.testing.assert_array_equal(got.positions, want)
        assert got.delta == delta
        # the delta is also the sum over images of max(t, h, w) - t*h*w
        assert got.delta == sum(max(g) - g[0] * g[1] * g[2] for g in grids)


@pytest.mark.parametrize(
    ("length", "offsets", "grids", "message"),
    [
        (10, [(2, 5)], [(1, 2, 3)], r"\[2, 5\] do not fit a grid of 1x2x3 in 10"),  # wrong size
        (5, [(2, 5)], [(1, 2, 2)], r"\[2, 5\] do not fit a grid of 1x2x2 in 5"),  # past the end
        (
            12,
            [(0, 3), (2, 5)],
            [(1, 2, 2), (1, 2, 2)],
            r"\[2, 5\] do not fit a grid of 1x2x2 in 12",
        ),  # overlap
        (12, [(0, 3)], [(1, 2, 2), (1, 1, 1)], r"1 offset pair\(s\) but 2 grid"),  # counts differ
    ],
)
def test_mrope_rejects_bad_blocks(length: int, offsets, grids, message: str) -> None:
    with pytest.raises(LayoutError, match=message):
        mrope_positions(length, offsets, grids)


@pytest.mark.parametrize("grid", [(0, 1, 1), (-1, -1, 1), (1, 2**40, 2**40), (1.0, 1, 1)], ids=repr)
def test_grids_the_native_walk_refuses_get_the_general_paths_answer(grid) -> None:
    """Zero, negative, overflowing or non-integer grids: the same outcome as the numpy walk
    (a `LayoutError` naming the block, or numpy's own error for a nonsense grid)."""
    with pytest.raises(Exception) as native:
        mrope_positions(4, [(0, 0)], [grid])
    with pytest.raises(Exception) as numpy_walk:
        _mrope_positions_py(4, [(0, 0)], [grid])
    assert type(native.value) is type(numpy_walk.value)
    assert str(native.value) == str(numpy_walk.value)


def test_rope1d_and_equality() -> None:
    assert Rope1D(5) == Rope1D(5)
    a = mrope_positions(4, [(1, 2)], [(1, 1, 2)])
    b = MRope(a.positions.copy(), a.delta)
    assert a == b
    assert a != MRope(a.positions + 1, a.delta)


def test_token_runs_are_the_maximal_runs_inside_the_span() -> None:
    from sglang_mm_core.plugin import token_runs

    ids = np.array([7, 7, 1, 7, 7, 7, 2, 3, 7, 1, 7], dtype=np.int64)
    assert token_runs(ids, (0, 10), 7) == [(0, 1), (3, 5), (8, 8), (10, 10)]
    assert token_runs(ids, (1, 4), 7) == [(1, 1), (3, 4)]  # cut at the span's ends
    assert token_runs(ids, (6, 7), 7) == []
    assert token_runs(list(ids), (0, 0), 7) == [(0, 0)]
    # what mrope_positions takes: one frame block per run, text between them
    runs = token_runs(ids, (3, 10), 7)
    got = mrope_positions(len(ids), runs[:2], [(1, 1, 3), (1, 1, 1)])
    assert got.positions.shape == (3, len(ids))
