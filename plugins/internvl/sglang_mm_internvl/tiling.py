"""The tile grid of an image, as each reference chooses it. Both pick the candidate grid whose
aspect ratio is closest to the image's, and on an exact tie take the later candidate while the
image covers more than half the candidate's area; they differ only in the order the candidates
are visited (HF: width-major, stably sorted by tile count; the model card: a Python ``set``,
sorted by tile count), which decides ties between grids of the same tile count. Both orders are
reproduced exactly (the set's iteration order is CPython's, deterministic for int tuples)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal, NamedTuple

Rule = Literal["hf", "model_card"]


class Tiling(NamedTuple):
    """``cols x rows`` tiles, plus a thumbnail tile when there is more than one."""

    cols: int
    rows: int
    thumbnail: bool

    @property
    def tiles(self) -> int:
        return self.cols * self.rows + int(self.thumbnail)


@lru_cache(maxsize=64)
def candidates(min_patches: int, max_patches: int, rule: Rule) -> tuple[tuple[int, int], ...]:
    """The ``(cols, rows)`` grids of ``min_patches..max_patches`` tiles, in visiting order."""
    if rule == "hf":
        # GotOcr2's get_all_supported_aspect_ratios.
        grids = [
            (w, h)
            for w in range(1, max_patches + 1)
            for h in range(1, max_patches + 1)
            if min_patches <= w * h <= max_patches
        ]
    else:
        # The model card's dynamic_preprocess: a set, so its iteration order is the set's.
        grids = list(
            {
                (i, j)
                for n in range(min_patches, max_patches + 1)
                for i in range(1, n + 1)
                for j in range(1, n + 1)
                if min_patches <= i * j <= max_patches
            }
        )
    return tuple(sorted(grids, key=lambda g: g[0] * g[1]))


@lru_cache(maxsize=4096)
def best_grid(
    width: int, height: int, tile: int, min_patches: int, max_patches: int, rule: Rule
) -> tuple[int, int]:
    """The ``(cols, rows)`` the reference picks for a ``width x height`` image."""
    aspect = width / height
    area = width * height
    best_diff = float("inf")
    best = (1, 1)
    for cols, rows in candidates(min_patches, max_patches, rule):
        diff = abs(aspect - cols / rows)
        if diff < best_diff:
            best_diff = diff
            best = (cols, rows)
        elif diff == best_diff and area > 0.5 * tile * tile * cols * rows:
            best = (cols, rows)
    return best


def tiling(
    width: int,
    height: int,
    *,
    tile: int,
    crop_to_patches: bool,
    min_patches: int,
    max_patches: int,
    rule: Rule,
) -> Tiling:
    """The tiles of a ``width x height`` image. Without cropping (or with one tile at most) the
    image becomes one tile, the whole image resized, as in both HF backends."""
    if not crop_to_patches or max_patches <= 1:
        return Tiling(1, 1, False)
    cols, rows = best_grid(width, height, tile, min_patches, max_patches, rule)
    return Tiling(cols, rows, cols * rows != 1)


__all__ = ["Rule", "Tiling", "best_grid", "candidates", "tiling"]
