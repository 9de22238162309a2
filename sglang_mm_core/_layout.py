"""How a prompt expands around its media, as one value. Expansion, offsets and positions all
derive from a `TokenLayout`, so they cannot disagree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from . import _native
from ._dict_init import dict_init
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
    tokens such as ``<img>`` can stay outside.

    With ``replaces_markers`` the ids replace the placeholder *and* the two marker tokens
    directly around it (its `Placeholder.between`, which must then be set, so the markers are
    checked to be there): the sequence writes its own markers and may put tokens before the
    prompt's opening one (Qwen3-VL's first video timestamp under transformers 4)."""

    ids: tuple[int, ...]
    content: tuple[int, int] | None = None
    replaces_markers: bool = False


Pattern: TypeAlias = Repeat | Explicit


def replaced_tokens(pattern: Pattern) -> int:
    """Prompt tokens ``pattern`` replaces: its placeholder (1), and its two markers too (3)
    when it `Explicit.replaces_markers`."""
    return 3 if type(pattern) is Explicit and pattern.replaces_markers else 1


@dataclass(frozen=True)
class Media:
    """Item ``item`` replaces one placeholder token with ``pattern`` (the placeholder and
    the markers around it when the pattern `Explicit.replaces_markers`: see
    `replaced_tokens`)."""

    item: int
    pattern: Pattern


Segment: TypeAlias = Text | Media


class TokenLayout:
    """A prompt's expansion: its segments in order (immutable, compared by segments).

    `layout_by_placeholder` builds one in a compact form (the placeholders' indices and
    counts) that `apply_layout` expands natively; ``segments`` is then built on first use."""

    __slots__ = ("_repeats", "_segments")

    _segments: tuple[Segment, ...] | None
    #: ``(prompt length, placeholder indices, token, counts)`` of the compact form
    _repeats: tuple[int, list[int], int, list[int]] | None

    def __init__(self, segments: Sequence[Segment]):
        object.__setattr__(self, "_segments", tuple(segments))
        object.__setattr__(self, "_repeats", None)

    @classmethod
    def _of_repeats(cls, n_src: int, at: list[int], token: int, counts: list[int]) -> TokenLayout:
        out = cls.__new__(cls)
        object.__setattr__(out, "_segments", None)
        object.__setattr__(out, "_repeats", (n_src, at, token, counts))
        return out

    @property
    def segments(self) -> tuple[Segment, ...]:
        if self._segments is None:
            assert self._repeats is not None
            n_src, at, token, counts = self._repeats
            patterns = [Repeat(token, c) for c in counts]
            object.__setattr__(self, "_segments", _placeholder_segments(n_src, at, patterns))
        assert self._segments is not None
        return self._segments

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"TokenLayout is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"TokenLayout is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TokenLayout):
            return NotImplemented
        return self.segments == other.segments

    def __hash__(self) -> int:
        return hash(self.segments)

    def __repr__(self) -> str:
        return f"TokenLayout(segments={self.segments!r})"

    def __reduce__(self) -> tuple[type[TokenLayout], tuple[tuple[Segment, ...]]]:
        return (TokenLayout, (self.segments,))


@dict_init
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
    rep = layout._repeats
    if rep is not None:
        src = _flat_ids(input_ids) if np.ndim(input_ids) == 1 else None
        if src is not None and rep[0] == len(src) and len(rep[1]) == n_items:
            try:
                got = _native.expand_repeats(src, rep[1], rep[2], rep[3])
            except (TypeError, OverflowError):  # counts that are not int64s: see below
                got = None
            if got is not None:
                return Expanded(got[0], got[1])
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
        taken = replaced_tokens(seg.pattern)
        if consumed + taken > n_src:
            raise LayoutError(f"item {seg.item} has no placeholder token left to replace")
        ids, a, b = _pattern_ids(seg.pattern)
        offsets[seg.item] = (length + a, length + b - 1)
        parts.append(ids)
        length += len(ids)
        consumed += taken
    if consumed != n_src:
        raise LayoutError(f"layout leaves prompt tokens {consumed}..{n_src - 1} unconsumed")
    missing = [k for k, off in enumerate(offsets) if off is None]
    if missing:
        raise LayoutError(f"layout never places item(s) {missing}")
    ids_out = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return Expanded(ids_out, [off for off in offsets if off is not None])


def layout_by_placeholder(
    input_ids: Sequence[int] | npt.NDArray[Any],
    placeholder_id: int,
    counts: Sequence[int],
    *,
    between: tuple[int, int] | None = None,
) -> TokenLayout:
    """One ``Media(k, Repeat(placeholder_id, counts[k]))`` per placeholder, text in between.

    ``between=(before, after)``: every placeholder must sit directly between those two ids
    (Qwen's ``vision_start``, ``vision_end``), else `LayoutError` naming the first that does
    not; checked in the same native pass as the search."""
    src, at = check_placeholders(input_ids, placeholder_id, len(counts), between)
    return TokenLayout._of_repeats(len(src), at, int(placeholder_id), list(counts))


def layout_by_placeholder_patterns(
    input_ids: Sequence[int] | npt.NDArray[Any],
    placeholder_id: int,
    patterns: Sequence[Pattern],
    *,
    between: tuple[int, int] | None = None,
) -> TokenLayout:
    """Like `layout_by_placeholder`, with any pattern per item (e.g. `Explicit` tiles; one
    that `Explicit.replaces_markers` needs ``between``)."""
    src, at = check_placeholders(input_ids, placeholder_id, len(patterns), between)
    _check_marker_patterns(patterns, between)
    return TokenLayout(_placeholder_segments(len(src), at, patterns))


def layout_by_placeholder_kinds(
    input_ids: Sequence[int] | npt.NDArray[Any],
    kinds: Sequence[tuple[int, tuple[int, int] | None, Sequence[Pattern]]],
) -> tuple[TokenLayout, list[tuple[int, int]]]:
    """A prompt with several kinds of media (images and videos), each kind ``(placeholder
    id, between, patterns)`` with its own placeholder and its items in order. Items are
    numbered in prompt order; the second value says, per prompt-order item, ``(kind, index
    within the kind)``. The placeholder rules hold per kind."""
    src = _flat_ids(input_ids)
    found: list[tuple[int, int, int]] = []  # (prompt index, kind, index in kind)
    for kind, (token, between, patterns) in enumerate(kinds):
        _, at = check_placeholders(src, token, len(patterns), between)
        _check_marker_patterns(patterns, between)
        found += [(pos, kind, k) for k, pos in enumerate(at)]
    found.sort()
    order = [(kind, k) for _, kind, k in found]
    patterns = [kinds[kind][2][k] for kind, k in order]
    return TokenLayout(_placeholder_segments(len(src), [f[0] for f in found], patterns)), order


def check_placeholders(
    input_ids: Sequence[int] | npt.NDArray[Any],
    placeholder_id: int,
    n_items: int,
    between: tuple[int, int] | None = None,
    *,
    what: str = "media",
) -> tuple[npt.NDArray[np.int64], list[int]]:
    """The prompt as int64 and its placeholders' indices, after the placeholder rules: one
    placeholder per item, each directly ``between`` its markers when given; else a
    `LayoutError` naming what is wrong (``what``: the items' name in it, e.g. ``"video"``).
    What the layout applies and what token counting applies before any item is decoded."""
    src, at = _placeholders(input_ids, placeholder_id, n_items, what)
    if between is not None:
        bad = _first_unwrapped(src, at, between)
        if bad is not None:
            raise LayoutError(
                f"{what} placeholder {bad} (token {at[bad]}, id {placeholder_id}) is not "
                f"directly between ids {between[0]} and {between[1]}"
            )
    return src, at


def _first_unwrapped(
    src: npt.NDArray[np.int64], at: list[int], between: tuple[int, int]
) -> int | None:
    try:
        return _native.first_unwrapped(src, at, between[0], between[1])
    except OverflowError:  # a marker id no int64 holds is next to nothing
        return 0 if at else None


def placeholder_indices(input_ids: Sequence[int] | npt.NDArray[Any], token: int) -> list[int]:
    """The indices of ``token`` in the prompt, ascending (a native scan: families call this
    under the GIL on every request)."""
    return _indices(_flat_ids(input_ids), token)


def _indices(src: npt.NDArray[np.int64], token: int) -> list[int]:
    try:
        return _native.token_indices(src, token)
    except OverflowError:  # a token id no int64 holds occurs nowhere
        return []


def _flat_ids(input_ids: Sequence[int] | npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    if (
        type(input_ids) is np.ndarray
        and input_ids.dtype == np.int64
        and input_ids.ndim == 1
        and input_ids.flags.c_contiguous
    ):
        return input_ids  # what the driver passes: no copy, no new view
    return np.ascontiguousarray(input_ids, dtype=np.int64).reshape(-1)


def _placeholders(
    input_ids: Sequence[int] | npt.NDArray[Any], token: int, n_items: int, what: str = "media"
) -> tuple[npt.NDArray[np.int64], list[int]]:
    """The prompt as int64 and its placeholders' indices, one per item or a `LayoutError`."""
    src = _flat_ids(input_ids)
    at = _indices(src, token)
    if len(at) != n_items:
        raise LayoutError(
            f"prompt has {len(at)} {what} placeholder(s) but {n_items} {what} item(s)"
        )
    return src, at


def _check_marker_patterns(patterns: Sequence[Pattern], between: tuple[int, int] | None) -> None:
    """A pattern that replaces its placeholder's markers needs markers to replace."""
    if between is None:
        for k, pattern in enumerate(patterns):
            if replaced_tokens(pattern) != 1:
                raise LayoutError(
                    f"item {k}'s tokens replace the markers around its placeholder, but the "
                    "placeholder has none (Placeholder.between is None)"
                )


def _placeholder_segments(
    n_src: int, at: Sequence[int], patterns: Sequence[Pattern]
) -> tuple[Segment, ...]:
    segments: list[Segment] = []
    start = 0
    for k, pos in enumerate(at):
        wide = replaced_tokens(patterns[k]) == 3  # the markers at pos - 1 and pos + 1 too
        first = pos - 1 if wide else pos
        if first < start:
            raise LayoutError(f"item {k}'s placeholder (token {pos}) shares a marker")
        if first > start:
            segments.append(Text(start, first))
        segments.append(Media(k, patterns[k]))
        start = pos + 2 if wide else pos + 1
    if start < n_src:
        segments.append(Text(start, n_src))
    return tuple(segments)


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
    "check_placeholders",
    "layout_by_placeholder",
    "layout_by_placeholder_kinds",
    "layout_by_placeholder_patterns",
    "placeholder_indices",
    "replaced_tokens",
]
