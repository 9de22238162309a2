"""The feature cache: processed items keyed by ``(spec_fingerprint, content hash)``.

Why the key is safe: the content hash is the full 256-bit BLAKE3 digest of the *encoded*
bytes, so equal keys mean equal input bytes (not merely equal URLs or names); the spec
fingerprint covers everything that decides the output (``family``, every ``params`` field
and every ``decode`` option, defaults written out), so two specs that could give different
bits never share an entry. Limits, fetch policy and threads are left out of the fingerprint
because they never change a feature.

Entries are stored in the compact form where the family offers one (4-8x smaller), bounded
by their bytes (least recently used out first). Concurrent requests for the same new key
compute it once: the first computes, the others wait for its result (single flight)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from ._carriers import ProcessedItem, Tensor


@dataclass(frozen=True)
class CacheStats:
    """Counters since the pipeline was built; ``bytes`` and ``entries`` are current."""

    hits: int
    misses: int
    waits: int
    evictions: int
    bytes: int
    entries: int
    max_bytes: int


def item_nbytes(item: ProcessedItem) -> int:
    """Bytes an entry holds: its feature (compact or full) and its aux tensors."""
    f = item.feature
    size = f.array.nbytes if isinstance(f, Tensor) else f.nbytes
    return int(size + sum(t.array.nbytes for t in item.aux.values()))


class _Flight:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: ProcessedItem | None = None
        self.error: BaseException | None = None


class FeatureCache:
    """A byte-bounded, thread-safe, single-flight LRU of `ProcessedItem` values."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[ProcessedItem, int]] = OrderedDict()
        self._flights: dict[Hashable, _Flight] = {}
        self._bytes = 0
        self._hits = self._misses = self._waits = self._evictions = 0

    def get_or_compute(
        self, key: Hashable, compute: Callable[[], ProcessedItem]
    ) -> tuple[ProcessedItem, bool]:
        """The entry of ``key`` and whether it was a hit; on a miss ``compute`` runs once
        however many threads ask at the same time. A failed computation is not stored: its
        error reaches every waiter, and the next request tries again."""
        with self._lock:
            got = self._entries.get(key)
            if got is not None:
                self._entries.move_to_end(key)
                self._hits += 1
                return got[0], True
            flight = self._flights.get(key)
            owner = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
                self._misses += 1
            else:
                self._waits += 1
        if not owner:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            assert flight.result is not None
            return flight.result, True
        try:
            result = compute()
        except BaseException as e:
            flight.error = e
            with self._lock:
                del self._flights[key]
            flight.done.set()
            raise
        flight.result = result
        self._store(key, result)
        flight.done.set()
        return result, False

    def _store(self, key: Hashable, item: ProcessedItem) -> None:
        size = item_nbytes(item)
        with self._lock:
            del self._flights[key]
            if size > self.max_bytes:
                return  # larger than the whole cache: served, not kept
            self._entries[key] = (item, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
                self._evictions += 1

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(
                hits=self._hits,
                misses=self._misses,
                waits=self._waits,
                evictions=self._evictions,
                bytes=self._bytes,
                entries=len(self._entries),
                max_bytes=self.max_bytes,
            )


__all__ = ["CacheStats", "FeatureCache", "item_nbytes"]
