"""Environment variables: one prefix, ``SGLANG_MM_``, shared with the package, its entry point
group and ``SGLANG_MM_PLUGINS``."""

from __future__ import annotations

PREFIX = "SGLANG_MM_"
THREADS_ENV = PREFIX + "THREADS"
PLUGINS_ENV = PREFIX + "PLUGINS"

__all__ = ["PLUGINS_ENV", "PREFIX", "THREADS_ENV"]
