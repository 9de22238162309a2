"""Position ids: plain 1-D RoPE (nothing beyond the length) or Qwen's 3-D MRoPE."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import _native
from ._dict_init import dict_init
from .errors import LayoutError


@dataclass(frozen=True)
class Rope1D:
    """Positions ``0 .. length-1``; the model runner derives them itself."""

    length: int


@dict_init
@dataclass(frozen=True, eq=False)
class MRope:
    """Qwen-style 3-D positions: int64 ``[3, L]`` (t, h, w rows) and the runner's ``delta``
    (``max(positions) + 1 - L``)."""

    positions: npt.NDArray[np.int64]
    delta: int

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MRope):
            return NotImplemented
        return self.delta == other.delta and np.array_equal(self.positions, other.positions)

    __hash__ = None  # type: ignore[assignment]


def mrope_positions(
    length: int,
    offsets: Sequence[tuple[int, int]],
    grids: Sequence[tuple[int, int, int]],
    *,
    time_intervals: Sequence[float | None] | None = None,
) -> MRope:
    """MRoPE for images only (algorithm: docs/families/qwen_vl.md). ``grids`` are the *merged* grids
    ``(t, h, w)`` in tokens, one per item; item ``k`` occupies ``offsets[k]`` (inclusive).

    One pass in token order with a running position: a text run takes the next positions on
    all three rows; an image block takes its ``(t, h, w)`` pattern on top of the running
    position, which then moves on by ``max(t, h, w)``. The last running position is
    ``max(positions) + 1``, so ``delta`` needs no reduction. This runs under the GIL for every
    request, so the walk is native; what it refuses comes here, which names the fault.

    With ``time_intervals`` (per item the step between a video's temporal positions, None for
    an image) the walk is transformers 5.x's, which prompts with videos need:
    `_mrope_positions_timed`."""
    if time_intervals is not None:
        return _mrope_positions_timed(length, offsets, grids, time_intervals)
    try:
        got = _native.mrope_positions(length, offsets, grids)
    except (TypeError, OverflowError):  # not plain integers: the walk below decides
        got = None
    if got is not None:
        return MRope(got[0], got[1])
    return _mrope_positions_py(length, offsets, grids)


def _walk(
    length: int,
    offsets: Sequence[tuple[int, int]],
    grids: Sequence[tuple[int, int, int]],
    place: Callable[[npt.NDArray[np.int64], int, int], int],
    what: str,
) -> tuple[npt.NDArray[np.int64], int]:
    """The walk in token order both rules share: text runs take the next positions on all
    three rows; ``place(block, cursor, k)`` writes item ``k``'s ``[3, n]`` block from the
    running position and returns how far that moves on. Returns the positions and the final
    running position."""
    if len(offsets) != len(grids):
        raise LayoutError(f"{len(offsets)} offset pair(s) but {len(grids)} grid(s)")
    pos = np.empty((3, length), dtype=np.int64)
    prev_end = -1
    cursor = 0  # the position the next token starts from
    order = sorted(range(len(grids)), key=lambda k: tuple(offsets[k]))
    for k in order:
        (s, e), (t, h, w) = offsets[k], grids[k]
        n = t * h * w
        if not (prev_end < s <= e < length) or e - s + 1 != n:
            raise LayoutError(
                f"{what} tokens [{s}, {e}] do not fit a grid of {t}x{h}x{w} in {length} token(s)"
            )
        if s > prev_end + 1:
            text = s - prev_end - 1
            pos[:, prev_end + 1 : s] = np.arange(cursor, cursor + text, dtype=np.int64)
            cursor += text
        cursor += place(pos[:, s : e + 1], cursor, k)
        prev_end = e
    if prev_end + 1 < length:
        text = length - prev_end - 1
        pos[:, prev_end + 1 :] = np.arange(cursor, cursor + text, dtype=np.int64)
        cursor += text
    return pos, cursor


def _mrope_positions_py(
    length: int,
    offsets: Sequence[tuple[int, int]],
    grids: Sequence[tuple[int, int, int]],
) -> MRope:
    """The same walk in numpy: the reference the native one is tested against, and the path
    that raises for blocks that do not fit (cold: no caching of ranges or patterns)."""

    def place(block: npt.NDArray[np.int64], cursor: int, k: int) -> int:
        t, h, w = grids[k]
        np.add(np.indices((t, h, w), dtype=np.int64).reshape(3, -1), cursor, out=block)
        return max(t, h, w)

    pos, cursor = _walk(length, offsets, grids, place, "image")
    return MRope(pos, cursor - length if length else 0)


def _mrope_positions_timed(
    length: int,
    offsets: Sequence[tuple[int, int]],
    grids: Sequence[tuple[int, int, int]],
    time_intervals: Sequence[float | None] | None,
) -> MRope:
    """``get_rope_index`` of transformers 5.x's Qwen2-VL and Qwen2.5-VL, for blocks with a
    time axis. A block's temporal positions are ``int(k * interval)`` for ``k < t``, computed
    in float32 as torch computes them (``interval`` is ``tokens_per_second *
    second_per_grid_t``, a float32; None for an image, whose step is 1), plus the running
    position; its height and width positions start there too. The running position then
    moves on by ``max(h, w)`` alone (4.x moved past the block's largest position, which
    differs once ``t`` exceeds them), and ``delta`` is ``max(positions) + 1 - L``, since a
    scaled time axis can reach past the running position."""
    steps = list(time_intervals) if time_intervals is not None else [None] * len(grids)
    if len(steps) != len(grids):
        raise LayoutError(f"{len(steps)} time interval(s) but {len(grids)} grid(s)")

    def place(block: npt.NDArray[np.int64], cursor: int, k: int) -> int:
        (t, h, w), step = grids[k], steps[k]
        if step is None:
            temporal = np.arange(t, dtype=np.int64)
        else:
            scaled = np.arange(t, dtype=np.float32) * np.float32(step)
            temporal = np.trunc(scaled).astype(np.int64)
        cube = np.empty((3, t, h, w), dtype=np.int64)
        cube[0] = (temporal + cursor)[:, None, None]
        cube[1] = (np.arange(h, dtype=np.int64) + cursor)[None, :, None]
        cube[2] = (np.arange(w, dtype=np.int64) + cursor)[None, None, :]
        block[...] = cube.reshape(3, -1)
        return max(h, w)

    pos, _ = _walk(length, offsets, grids, place, "vision")
    return MRope(pos, int(pos.max()) + 1 - length if length else 0)


def token_runs(
    input_ids: npt.ArrayLike, span: tuple[int, int], token: int
) -> list[tuple[int, int]]:
    """The maximal runs of ``token`` inside the inclusive ``span`` of ``input_ids``, as
    inclusive ``(start, end)`` pairs in prompt order: the blocks of an item whose expansion
    puts text between its embeddings (a video's frames, each group of Qwen3-VL's or GLM's
    between its markers and timestamp), which their models' ``get_rope_index`` place as blocks
    of their own."""
    s, e = span
    inside = np.asarray(input_ids)[s : e + 1] == token
    edges = np.flatnonzero(np.diff(inside.astype(np.int8), prepend=0, append=0))
    return [(s + int(a), s + int(b) - 1) for a, b in zip(edges[0::2], edges[1::2], strict=True)]


__all__ = ["MRope", "Rope1D", "mrope_positions", "token_runs"]
