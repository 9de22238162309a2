"""The thread count of a call, as SGLang's extension users expect it."""

from __future__ import annotations

import os

from sglang_mm_core.errors import SpecError
from sglang_mm_core.plugin import resolve_threads

#: SGLang's own extension's thread count, read when ``$SGLANG_MM_THREADS`` is unset.
SGLANG_EXT_THREADS_ENV = "SGL_MM_RS_THREADS"


def threads() -> int:
    """The pool size of one call: ``$SGLANG_MM_THREADS``, else the extension's
    ``$SGL_MM_RS_THREADS`` (``0`` meaning the default pool, as rayon reads it), else the
    core's default. Read on every call, so a change of the environment takes effect (the
    extension reads it once per process); a value that is not a non-negative integer is a
    `SpecError` naming the variable."""
    if os.environ.get("SGLANG_MM_THREADS", "").strip():
        return resolve_threads(None)
    raw = os.environ.get(SGLANG_EXT_THREADS_ENV, "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            value = -1
        if value < 0:
            raise SpecError(f"{SGLANG_EXT_THREADS_ENV} must be a non-negative integer, got {raw!r}")
        if value:
            return value
    return resolve_threads(None)


def missing_plugin(err: ModuleNotFoundError, distribution: str, submodule: str) -> Exception:
    """The error to raise when importing a family plugin failed with ``err``: an `ImportError`
    saying which distribution to install when the plugin itself is missing (a dependency
    left out, e.g. by ``pip install --no-deps``), else ``err`` (the plugin is there but
    broken, and its own error says why)."""
    module = distribution.replace("-", "_")
    if err.name != module:
        return err
    return ImportError(
        f"sglang_mm_sglang.{submodule} needs the {module} plugin: pip install {distribution}",
        name=module,
    )


__all__ = ["SGLANG_EXT_THREADS_ENV", "missing_plugin", "threads"]
