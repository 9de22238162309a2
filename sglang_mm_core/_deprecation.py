"""How a public name or module path is retired: it keeps working for one release and says
where it moved, with a `DeprecationWarning`, so a plugin written against the old docs runs
unchanged while its author is told what to change."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any


def warn_deprecated(old: str, instead: str, *, stacklevel: int = 3) -> None:
    """One `DeprecationWarning`: ``old`` goes in the next release, ``instead`` says what to do.
    The default ``stacklevel`` blames the caller of the function that calls this one."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; {instead}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def warn_moved_module(old: str, new: str) -> None:
    """Called at the top level of a shim module that only re-exports a private one; the
    warning blames the ``import`` statement (`warnings` skips importlib's own frames)."""
    # 1 warn_deprecated, 2 here, 3 the shim module, 4 the importer.
    warn_deprecated(f"module {old}", f"import from {new}", stacklevel=4)


def deprecated_aliases(module: str, aliases: Mapping[str, tuple[str, Any]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving retired names: ``aliases[old] = (new_path, object)``.

    The object is returned with a warning; any other missing name is an `AttributeError` as
    usual, so ``hasattr`` and star imports behave."""

    def __getattr__(name: str) -> Any:
        entry = aliases.get(name)
        if entry is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new, obj = entry
        warn_deprecated(f"{module}.{name}", f"use {new}")
        return obj

    return __getattr__
