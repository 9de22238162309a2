"""How a prompt expands around its media, as one value. Expansion, offsets and positions all
derive from a `TokenLayout`, so they cannot disagree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from .errors import LayoutError


@dataclass(frozen=True)
class Text:
    """The half-open range ``[start, end)`` of the original ids, copied as is."""

    start: int
    end: int


@dataclass(frozen=True)
class Repeat:
    """``count`` copies of ``token``."""

    token: int
    count: int


@dataclass(frozen=True)
class Explicit:
    """An exact id sequence (tile markers, row separators). The item's offsets cover
    ``ids[content[0]:content[1]]`` (the whole sequence when ``content`` is None), so wrapper
    tokens such as ``<img>`` can stay outside."""

    ids: tuple[int, ...]
    content: tuple[int, int] | None = None


Pattern: TypeAlias = Repeat | Explicit


@dataclass(frozen=True)
class Media:
    """Item ``item`` replaces one placeholder token with ``pattern``."""

    item: int
    pattern: Pattern


Segment: TypeAlias = Text | Media


@dataclass(frozen=True)
class TokenLayout:
    segments: tuple[Segment, ...]

    def __init__(self, segments: Sequence[Segment]):
        object.__setattr__(self, "segments", tuple(segments))


@dataclass(frozen=True, eq=False)
class Expanded:
    """The result of `apply_layout`: the expanded ids and each item's inclusive offsets."""

    input_ids: npt.NDArray[np.int64]
    offsets: list[tuple[int, int]]


def _pattern_ids(pattern: Pattern) -> tuple[npt.NDArray[np.int64], int, int]:
    """The pattern's ids and the half-open content range within them."""
    if isinstance(pattern, Repeat):
        if pattern.count <= 0:
            raise LayoutError(f"a media item must take at least one token, got {pattern.count}")
        ids = np.empty(pattern.count, dtype=np.int64)
        ids.fill(pattern.token)  # np.full's own Python layer costs more than the fill
        return ids, 0, pattern.count
    ids = np.asarray(pattern.ids, dtype=np.int64)
    a, b = pattern.content if pattern.content is not None else (0, len(ids))
    if not 0 <= a < b <= len(ids):
        raise LayoutError(
            f"explicit content range {(a, b)} is empty or outside its {len(ids)} id(s)"
        )
    return ids, a, b


def apply_layout(
    input_ids: Sequence[int] | npt.NDArray[Any], layout: TokenLayout, n_items: int
) -> Expanded:
    """Expand ``input_ids`` by ``layout`` for ``n_items`` media items (the rules are in
    docs/plugins.md, under ``layout``)."""
    src = np.asarray(input_ids, dtype=np.int64)
    n_src = len(src)
    parts: list[npt.NDArray[np.int64]] = []
    offsets: list[tuple[int, int] | None] = [None] * n_items
    consumed = 0
    length = 0
    for seg in layout.segments:
        if isinstance(seg, Text):
            if seg.start != consumed or not seg.start <= seg.end <= n_src:
                raise LayoutError(
                    f"text segment [{seg.start}, {seg.end}) must start at token {consumed} "
                    f"and stay within the {n_src} prompt token(s)"
                )
            parts.append(src[seg.start : seg.end])
            length += seg.end - seg.start
            consumed = seg.end
            continue
        if not 0 <= seg.item < n_items:
            raise LayoutError(f"layout places item {seg.item}, but the request has {n_items}")
        if offsets[seg.item] is not None:
            raise LayoutError(f"layout places item {seg.item} twice")
        if consumed >= n_src:
            raise LayoutError(f"item {seg.item} has no placeholder token left to replace")
        ids, a, b = _pattern_ids(seg.pattern)
        offsets[seg.item] = (length + a, length + b - 1)
        parts.append(ids)
        length += len(ids)
        consumed += 1
    if consumed != n_src:
        raise LayoutError(f"layout leaves prompt tokens {consumed}..{n_src - 1} unconsumed")
    missing = [k for k, off in enumerate(offsets) if off is None]
    if missing:
        raise LayoutError(f"layout never places item(s) {missing}")
    ids_out = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return Expanded(ids_out, [off for off in offsets if off is not None])


def layout_by_placeholder(
    input_ids: Sequence[int] | npt.NDArray[Any], placeholder_id: int, counts: Sequence[int]
) -> TokenLayout:
    """One ``Media(k, Repeat(placeholder_id, counts[k]))`` per placeholder, text in between."""
    return layout_by_placeholder_patterns(
        input_ids, placeholder_id, [Repeat(placeholder_id, c) for c in counts]
    )


def layout_by_placeholder_patterns(
    input_ids: Sequence[int] | npt.NDArray[Any], placeholder_id: int, patterns: Sequence[Pattern]
) -> TokenLayout:
    """Like `layout_by_placeholder`, with any pattern per item (e.g. `Explicit` tiles)."""
    src = np.asarray(input_ids, dtype=np.int64).reshape(-1)
    where = (src == placeholder_id).nonzero()[0]
    if len(where) != len(patterns):
        raise LayoutError(
            f"prompt has {len(where)} media placeholder(s) but {len(patterns)} media item(s)"
        )
    segments: list[Segment] = []
    start = 0
    for k, pos in enumerate(where.tolist()):
        if pos > start:
            segments.append(Text(start, pos))
        segments.append(Media(k, patterns[k]))
        start = pos + 1
    if start < len(src):
        segments.append(Text(start, len(src)))
    return TokenLayout(segments)


__all__ = [
    "Expanded",
    "Explicit",
    "Media",
    "Pattern",
    "Repeat",
    "Segment",
    "Text",
    "TokenLayout",
    "apply_layout",
    "layout_by_placeholder",
    "layout_by_placeholder_patterns",
]
