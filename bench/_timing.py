"""Interleaved timing for the benches: every contender runs once per round, in turn, so a
noisy neighbour slows them all alike; medians are compared."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median wall time in ms of each, run by run in turn after one warm-up call each."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}
