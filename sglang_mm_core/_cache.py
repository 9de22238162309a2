"""The feature cache: processed items keyed by ``(spec_fingerprint, content hash)`` and form.

Why the key is safe: the content hash is the full 256-bit BLAKE3 digest of the *encoded*
bytes, so equal keys mean equal input bytes (not merely equal URLs or names); the spec
fingerprint covers everything that decides the output (``family``, every ``params`` field
and every ``decode`` option, defaults written out), so two specs that could give different
bits never share an entry. Limits, fetch policy and threads are left out of the fingerprint
because they never change a feature.

Each entry is one form of an item, ``"full"`` or ``"compact"`` (a family without a compact
form only ever has ``"full"``): a request is answered from the entry of the form it asks for,
and a miss computes that form from the bytes and keeps it. The forms never stand in for each
other: a full request that finds only the compact entry computes the full form (the driver's
native path is faster than `CompactTensor.expand`'s CPU gather, and a hit must cost nothing),
and is counted as a full miss. Both forms share the one byte bound (least recently used out
first, whatever its form). Concurrent requests for the same new ``(key, form)`` compute it
once: the first computes, the others wait for its result (single flight).

A hit hands out the stored buffers themselves, no copy: every array of an entry is a
read-only view (``flags.writeable`` False) from the moment it is stored, so the miss that
computed it, its waiters and every later hit get the same read-only arrays, and no caller can
change an entry under another."""

from __future__ import annotations

import dataclasses
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy.typing as npt

from ._carriers import ProcessedItem, Tensor
from ._compact import CompactTensor, _read_only
from .errors import RequestCancelledError

#: The form of an entry: the full feature, or its compact form (`CompactTensor`).
Form = Literal["full", "compact"]
FORMS: tuple[Form, ...] = ("full", "compact")


@dataclass(frozen=True)
class FormStats:
    """One form's counters since the pipeline was built; ``bytes`` and ``entries`` are
    current. A wait is a request that found its ``(key, form)`` being computed and took that
    result (it is not counted as a hit)."""

    hits: int
    misses: int
    waits: int
    evictions: int
    bytes: int
    entries: int


@dataclass(frozen=True)
class CacheStats:
    """The cache's counters per form (``by_form``: ``"full"`` and, for a family that offers
    it, ``"compact"``) and its bound; ``hits``, ``misses``, ``waits``, ``evictions``,
    ``bytes`` and ``entries`` are the sums over the forms."""

    max_bytes: int
    by_form: Mapping[Form, FormStats]

    def _sum(self, field: str) -> int:
        return sum(getattr(f, field) for f in self.by_form.values())

    @property
    def hits(self) -> int:
        return self._sum("hits")

    @property
    def misses(self) -> int:
        return self._sum("misses")

    @property
    def waits(self) -> int:
        return self._sum("waits")

    @property
    def evictions(self) -> int:
        return self._sum("evictions")

    @property
    def bytes(self) -> int:
        return self._sum("bytes")

    @property
    def entries(self) -> int:
        return self._sum("entries")


def _held(arr: npt.NDArray[Any]) -> int:
    """Bytes an array holds: a broadcast view (a 0 stride, e.g. repeated frames) holds its
    values once, not once per repeat."""
    if 0 not in arr.strides:
        return int(arr.nbytes)
    kept = (n for n, s in zip(arr.shape, arr.strides, strict=True) if s != 0)
    return int(arr.itemsize * math.prod(kept))


def item_nbytes(item: ProcessedItem) -> int:
    """Bytes an entry holds: its feature (compact or full) and its aux tensors."""
    f = item.feature
    size = _held(f.array) if isinstance(f, Tensor) else f.nbytes
    return int(size + sum(_held(t.array) for t in item.aux.values()))


def _tensor_read_only(t: Tensor) -> Tensor:
    return t if not t.array.flags.writeable else Tensor(_read_only(t.array), t.dtype)


def read_only(item: ProcessedItem) -> ProcessedItem:
    """``item`` with every array a read-only view of the same buffer (nothing is copied; the
    compact form's tables are read-only already, `CompactTensor` sees to it)."""
    f = item.feature
    if isinstance(f, Tensor):
        feature: Tensor | CompactTensor = _tensor_read_only(f)
    elif f.codes.flags.writeable:
        feature = dataclasses.replace(f, codes=_read_only(f.codes))
    else:
        feature = f
    aux = {k: _tensor_read_only(t) for k, t in item.aux.items()}
    return ProcessedItem(feature, aux, item.geometry, item.plan)


class _Counts:
    __slots__ = ("bytes", "entries", "evictions", "hits", "misses", "waits")

    def __init__(self) -> None:
        self.hits = self.misses = self.waits = self.evictions = self.bytes = self.entries = 0

    def frozen(self) -> FormStats:
        return FormStats(
            self.hits, self.misses, self.waits, self.evictions, self.bytes, self.entries
        )


class _Flight:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: ProcessedItem | None = None
        self.error: BaseException | None = None


_Slot = tuple[Hashable, Form]


class FeatureCache:
    """A byte-bounded, thread-safe, single-flight LRU of `ProcessedItem` values, one entry
    per ``(key, form)``; ``forms`` are the forms it may hold (``("full",)`` for a family
    without a compact form), each counted on its own."""

    def __init__(self, max_bytes: int, forms: Sequence[Form] = ("full",)) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        unknown = [f for f in forms if f not in FORMS]
        if unknown or not forms:
            raise ValueError(f"forms must be some of {list(FORMS)}, got {list(forms)}")
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[_Slot, tuple[ProcessedItem, int]] = OrderedDict()
        self._flights: dict[_Slot, _Flight] = {}
        self._counts: dict[Form, _Counts] = {f: _Counts() for f in forms}

    def get_or_compute(
        self, key: Hashable, form: Form, compute: Callable[[], ProcessedItem]
    ) -> tuple[ProcessedItem, bool]:
        """The ``form`` entry of ``key`` (read-only arrays) and whether it was a hit or a
        wait; on a miss ``compute`` runs once however many threads ask at the same time. A
        failed computation is not stored: its error reaches every waiter, and the next
        request tries again. A computation stopped because *its* request was cancelled
        (`RequestCancelledError`) is not the waiters' error: they start over, one of them
        computing."""
        counts = self._counts.get(form)
        if counts is None:
            raise ValueError(f"this cache holds the forms {list(self._counts)}, not {form!r}")
        slot: _Slot = (key, form)
        while True:
            with self._lock:
                got = self._entries.get(slot)
                if got is not None:
                    self._entries.move_to_end(slot)
                    counts.hits += 1
                    return got[0], True
                flight = self._flights.get(slot)
                owner = flight is None
                if flight is None:
                    flight = self._flights[slot] = _Flight()
                    counts.misses += 1
                else:
                    counts.waits += 1
            if owner:
                break
            flight.done.wait()
            if isinstance(flight.error, RequestCancelledError):
                continue
            if flight.error is not None:
                raise flight.error
            assert flight.result is not None
            return flight.result, True
        try:
            result = read_only(compute())
        except BaseException as e:
            flight.error = e
            with self._lock:
                del self._flights[slot]
            flight.done.set()
            raise
        flight.result = result
        self._store(slot, result)
        flight.done.set()
        return result, False

    def _store(self, slot: _Slot, item: ProcessedItem) -> None:
        size = item_nbytes(item)
        with self._lock:
            del self._flights[slot]
            if size > self.max_bytes:
                return  # larger than the whole cache: served, not kept
            self._entries[slot] = (item, size)
            c = self._counts[slot[1]]
            c.bytes += size
            c.entries += 1
            total = sum(x.bytes for x in self._counts.values())
            while total > self.max_bytes:
                (_, form), (_, dropped) = self._entries.popitem(last=False)
                d = self._counts[form]
                d.bytes -= dropped
                d.entries -= 1
                d.evictions += 1
                total -= dropped

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(
                max_bytes=self.max_bytes,
                by_form={f: c.frozen() for f, c in self._counts.items()},
            )


__all__ = ["FORMS", "CacheStats", "FeatureCache", "Form", "FormStats", "item_nbytes", "read_only"]
