"""Position ids: plain 1-D RoPE (nothing beyond the length) or Qwen's 3-D MRoPE."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .errors import LayoutError


@dataclass(frozen=True)
class Rope1D:
    """Positions ``0 .. length-1``; the model runner derives them itself."""

    length: int


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
) -> MRope:
    """MRoPE for images only (algorithm: docs/families/qwen_vl.md). ``grids`` are the *merged* grids
    ``(t, h, w)`` in tokens, one per item; item ``k`` occupies ``offsets[k]`` (inclusive).

    Vectorised: every token starts at its index plus the shift that the images before it
    introduced; each image block then gets its own ``(t, h, w)`` pattern on top of its base."""
    if len(offsets) != len(grids):
        raise LayoutError(f"{len(offsets)} offset pair(s) but {len(grids)} grid(s)")
    shift = np.zeros(length + 1, dtype=np.int64)
    blocks: list[tuple[int, int, tuple[int, int, int]]] = []
    prev_end = -1
    for (s, e), (t, h, w) in sorted(zip(offsets, grids, strict=True)):
        n = t * h * w
        if not (prev_end < s <= e < length) or e - s + 1 != n:
            raise LayoutError(
                f"image tokens [{s}, {e}] do not fit a grid of {t}x{h}x{w} in {length} token(s)"
            )
        shift[e + 1] += max(t, h, w) - n
        blocks.append((s, e, (t, h, w)))
        prev_end = e
    shift = np.cumsum(shift[:length])
    pos = np.broadcast_to(np.arange(length, dtype=np.int64) + shift, (3, length)).copy()
    for s, e, (t, h, w) in blocks:
        base = s + int(shift[s])
        ti, hi, wi = np.indices((t, h, w), dtype=np.int64).reshape(3, -1)
        pos[0, s : e + 1] = base + ti
        pos[1, s : e + 1] = base + hi
        pos[2, s : e + 1] = base + wi
    delta = int(pos.max()) + 1 - length if length else 0
    return MRope(pos, delta)


__all__ = ["MRope", "Rope1D", "mrope_positions"]
