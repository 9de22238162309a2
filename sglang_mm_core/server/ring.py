"""The columnar hand-over of embedded mode: parked requests' ids live in an append-only arena,
so a drained run of requests is one contiguous int64 slice, handed to the host as a view.

A request's ids are appended to the current arena chunk when it becomes drainable (by the worker
or whoever made it drainable, never by ``drain``), so the arena holds them in hand-over order:
the batch of a drain is usually ``chunk[a:b]`` with no copy at all; only when a drain spans two
chunks, or a drainable request was withdrawn from the middle (its client left), is the batch's
buffer concatenated. A chunk is never reused: it is freed when the last batch viewing it is."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from .._carriers import MmItem, MmOutput
from .._positions import MRope

IdArray = npt.NDArray[np.int64]
_UNPLACED: IdArray = np.empty(0, dtype=np.int64)


@dataclass(eq=False)
class Parked:
    """One processed request waiting for the host, its batch columns prepared by the worker
    that parked it (so a drain only gathers them: host time stays flat). Its ids enter the
    arena with `place`, once its place in the hand-over order is known."""

    header: dict[str, Any]
    items: list[MmItem]
    positions: IdArray | None
    ids: IdArray | None  # until placed
    chunk: IdArray = field(default_factory=lambda: _UNPLACED)
    start: int = 0
    end: int = 0

    @classmethod
    def of(cls, rid: str, out: MmOutput) -> Parked:
        mrope = out.positions if isinstance(out.positions, MRope) else None
        header = {
            "rid": rid,
            "n_items": len(out.items),
            "offsets": out.offsets,
            "hashes": [it.hash for it in out.items],
            "mrope_delta": None if mrope is None else mrope.delta,
        }
        positions = None if mrope is None else mrope.positions
        return cls(header, out.items, positions, out.input_ids)

    def place(self, arena: IdArena) -> None:
        """Copy the ids into ``arena`` (after those placed before) and drop the original."""
        assert self.ids is not None, "placed twice"
        self.chunk, self.start, self.end = arena.store(self.ids)
        self.ids = None


class IdArena:
    """Bump allocator of int64 ids over chunks of ``chunk_ids`` (a longer request gets a chunk
    of its own)."""

    def __init__(self, chunk_ids: int) -> None:
        self.chunk_ids = chunk_ids
        self._chunk: IdArray | None = None
        self._pos = 0

    def store(self, ids: IdArray) -> tuple[IdArray, int, int]:
        n = len(ids)
        if self._chunk is None or self._pos + n > len(self._chunk):
            self._chunk = np.empty(max(self.chunk_ids, n), dtype=np.int64)
            self._pos = 0
        start = self._pos
        self._chunk[start : start + n] = ids
        self._pos = start + n
        return self._chunk, start, start + n


@dataclass(frozen=True, eq=False)
class IngressBatch:
    """Up to ``max_n`` drained requests, column by column.

    - ``headers``: one small dict per request: ``rid``, ``n_items``, ``offsets`` (inclusive
      ``(start, end)`` per item, into that request's ids), ``hashes``, ``mrope_delta`` (None
      for 1-D RoPE).
    - ``data``: every request's expanded ``input_ids``, concatenated (one int64 buffer).
    - ``lengths``: ids per request; ``starts``: where each request's ids begin in ``data``.
    - ``items``: per request, its `MmItem` list (feature and aux arrays as the worker made
      them, no copy); ``positions``: per request, the MRoPE ``[3, L]`` array or None.
    """

    headers: list[dict[str, Any]]
    data: IdArray
    lengths: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    items: list[list[MmItem]]
    positions: list[IdArray | None]
    family: str
    spec_fingerprint: str

    def __len__(self) -> int:
        return len(self.headers)

    @property
    def rids(self) -> list[str]:
        return [h["rid"] for h in self.headers]

    def ids(self, i: int) -> IdArray:
        """Request ``i``'s ids, a view of ``data``."""
        s = int(self.starts[i])
        return self.data[s : s + int(self.lengths[i])]

    def output(self, i: int) -> MmOutput:
        """Request ``i`` as the `MmOutput` the in-process pipeline would return (views)."""
        from .._positions import Rope1D

        h = self.headers[i]
        ids = self.ids(i)
        pos = self.positions[i]
        positions = Rope1D(len(ids)) if pos is None else MRope(pos, int(h["mrope_delta"]))
        return MmOutput(
            input_ids=ids,
            items=self.items[i],
            offsets=list(h["offsets"]),
            positions=positions,
            family=self.family,
            spec_fingerprint=self.spec_fingerprint,
            rid=h["rid"],
        )


_HEADER = attrgetter("header")
_ITEMS = attrgetter("items")
_POSITIONS = attrgetter("positions")
_START = attrgetter("start")
_END = attrgetter("end")
_CHUNK = attrgetter("chunk")


def build_batch(parked: Sequence[Parked], family: str, fingerprint: str) -> IngressBatch:
    """The columnar batch of ``parked`` (in order). Column gathers run in C (``map`` over
    attribute getters), so the host's cost per request is a few attribute reads."""
    n = len(parked)
    if n == 0:
        empty = np.empty(0, dtype=np.int64)
        return IngressBatch([], empty, empty, empty, [], [], family, fingerprint)
    begin = np.fromiter(map(_START, parked), dtype=np.int64, count=n)
    end = np.fromiter(map(_END, parked), dtype=np.int64, count=n)
    lengths = end - begin
    starts = begin - begin[0]
    chunk = parked[0].chunk
    back_to_back = bool((begin[1:] == end[:-1]).all()) and all(
        map(operator.is_, map(_CHUNK, parked), repeat(chunk))
    )
    if back_to_back:
        data = chunk[begin[0] : end[-1]]
    else:
        data = np.concatenate([p.chunk[p.start : p.end] for p in parked])
        starts = np.zeros(n, dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
    data.flags.writeable = False
    return IngressBatch(
        list(map(_HEADER, parked)),
        data,
        lengths,
        starts,
        list(map(_ITEMS, parked)),
        list(map(_POSITIONS, parked)),
        family,
        fingerprint,
    )


__all__ = ["IdArena", "IngressBatch", "Parked", "build_batch"]
