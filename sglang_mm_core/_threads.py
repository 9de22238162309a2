"""The one thread decision of the product: how many cores this process may use, and the pool
size a pipeline gets. The driver, the server and the plugins' direct APIs all ask here; the
Rust kernels never read the environment or count cores."""

from __future__ import annotations

import os

from ._env import THREADS_ENV
from .errors import SpecError

#: The default pool never exceeds this many threads.
MAX_DEFAULT_THREADS = 8


def available_cores() -> int:
    """The cores this process may run on: its affinity set where the platform has one (a
    container or ``taskset`` narrows it), else ``os.cpu_count()``."""
    getaff = getattr(os, "sched_getaffinity", None)
    if getaff is not None:
        try:
            return max(1, len(getaff(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def env_int(name: str) -> int | None:
    """The environment variable ``name`` as a non-negative integer, or None when unset or
    blank; anything else is a `SpecError` naming the value."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise SpecError(f"{name} must be a non-negative integer, got {raw!r}")
    return value


def env_threads() -> int | None:
    """``$SGLANG_MM_THREADS`` as a pool size, or None when unset or blank."""
    return env_int(THREADS_ENV)


def resolve_threads(spec_threads: int | None, *, cores: int | None = None) -> int:
    """Pool size: the spec's ``threads``, else ``$SGLANG_MM_THREADS``, else ``min(8, cores)``
    (``cores`` defaults to `available_cores`); 0 means inline on the calling thread."""
    if spec_threads is not None:
        return spec_threads
    env = env_threads()
    if env is not None:
        return env
    return min(MAX_DEFAULT_THREADS, available_cores() if cores is None else max(1, cores))


__all__ = ["MAX_DEFAULT_THREADS", "available_cores", "env_int", "env_threads", "resolve_threads"]
