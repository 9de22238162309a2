"""Environment variables: one prefix, ``SGLANG_MM_``.

``SGLANG_MM_`` is the prefix of the package (``sglang_mm_core``), of its entry point group and
of ``SGLANG_MM_PLUGINS``, and SGLang itself has retired its short ``SGL_`` prefix in favour of
``SGLANG_``. The one variable ever spelt with the short prefix, ``SGL_MM_THREADS``, still works
for one release: when only the old name is set, importing `sglang_mm_core` copies it to the new
one with a `DeprecationWarning`. Every reader (the driver, the server, the Rust kernels of the
plugins, child processes) then sees a single name."""

from __future__ import annotations

import os

from ._deprecation import warn_deprecated

PREFIX = "SGLANG_MM_"
THREADS_ENV = PREFIX + "THREADS"

#: SGLang's own extension's thread count (not ours, so not renamed): read only by the
#: `sglang_mm_core.compat.sglang` API, and only when ``SGLANG_MM_THREADS`` is unset
#: (`sglang_mm_core.driver.env_threads`).
SGLANG_EXT_THREADS_ENV = "SGL_MM_RS_THREADS"

#: Deprecated name -> current name.
RENAMED: dict[str, str] = {"SGL_MM_THREADS": THREADS_ENV}


def migrate_legacy_env() -> list[str]:
    """Copy each deprecated variable to its new name when only the old one is set; returns
    the old names that were copied. A set new name always wins (the old one is then ignored,
    with a warning as well)."""
    copied = []
    for old, new in RENAMED.items():
        if old not in os.environ:
            continue
        if new in os.environ:
            warn_deprecated(f"${old}", f"${new} is set too and wins", stacklevel=2)
            continue
        os.environ[new] = os.environ[old]
        copied.append(old)
        warn_deprecated(f"${old}", f"use ${new}", stacklevel=2)
    return copied


__all__ = ["PREFIX", "RENAMED", "SGLANG_EXT_THREADS_ENV", "THREADS_ENV", "migrate_legacy_env"]
