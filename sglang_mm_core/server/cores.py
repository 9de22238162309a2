"""Core partitioning between a host's launch thread and the server's workers.

An engine's scheduler loop is latency-critical; preprocessing is throughput work. On a machine
with enough cores the two are kept apart: the lowest few allowed cores stay with the host, the
rest go to the workers. Pinning is per thread (``sched_setaffinity(0, ...)`` on Linux acts on
the calling thread), and threads started later inherit their creator's set, so a worker that
pins itself also pins the kernel threads it starts."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

log = logging.getLogger("sglang_mm.server")

MIN_CORES_TO_PARTITION = 4
MAX_RESERVED = 2

Cores = tuple[int, ...]


def _getaffinity() -> Callable[[int], set[int]] | None:
    return getattr(os, "sched_getaffinity", None)


def _setaffinity() -> Callable[[int, Iterable[int]], None] | None:
    return getattr(os, "sched_setaffinity", None)


def affinity_available() -> bool:
    """Whether this platform can read and set a thread's CPU affinity."""
    return _getaffinity() is not None and _setaffinity() is not None


def allowed_cores() -> Cores | None:
    """The cores the calling thread may run on (sorted), or None without an affinity API."""
    get = _getaffinity()
    if get is None or _setaffinity() is None:
        return None
    return tuple(sorted(get(0)))


def partition_cores(allowed: Iterable[int] | None = None) -> tuple[Cores | None, Cores | None]:
    """``(launch_cores, server_cores)`` for the calling thread's allowed set (or ``allowed``).

    No affinity API, or fewer than 4 allowed cores: ``(None, None)``, everything unpinned.
    Otherwise ``reserve = min(2, n // 4)`` lowest cores go to the host's launch thread and the
    rest to the workers."""
    if allowed is None:
        current = allowed_cores()
        if current is None:
            return None, None
        cores = current
    else:
        if not affinity_available():
            return None, None
        cores = tuple(sorted(set(allowed)))
    n = len(cores)
    if n < MIN_CORES_TO_PARTITION:
        return None, None
    reserve = min(MAX_RESERVED, n // 4)
    return cores[:reserve], cores[reserve:]


def pin_current_thread(cores: Iterable[int] | None, who: str, *, tid: int = 0) -> bool:
    """Pin the calling thread (or the thread with native id ``tid``) to ``cores``; a failure
    is a warning, never an error (the thread then runs unpinned). Returns whether it took."""
    if cores is None:
        return False
    wanted = set(cores)
    setter = _setaffinity()
    if setter is None:
        log.warning("cannot pin %s to cores %s: no affinity API on this platform", who, wanted)
        return False
    try:
        setter(tid, wanted)
    except (OSError, ValueError) as e:
        log.warning("cannot pin %s to cores %s: %s; it runs unpinned", who, sorted(wanted), e)
        return False
    return True


__all__ = [
    "Cores",
    "affinity_available",
    "allowed_cores",
    "partition_cores",
    "pin_current_thread",
]
