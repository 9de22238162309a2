"""How a public name or module path is retired: it keeps working for one release and says
where it moved, with a `DeprecationWarning`, so a plugin written against the old docs runs
unchanged while its author is told what to change."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any


def warn_deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """One `DeprecationWarning` saying that ``old`` is now ``new``."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def warn_moved_module(old: str, new: str) -> None:
    """Called at the top level of a shim module that only re-exports a private one."""
    # stacklevel 3: this function, the shim module, then the importer (through importlib).
    warn_deprecated(f"importing {old}", f"import from {new}", stacklevel=3)


def deprecated_aliases(module: str, aliases: Mapping[str, tuple[str, Any]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving old names: ``aliases[old] = (new_path, object)``.

    The object is returned with a warning; any other missing name is an `AttributeError` as
    usual, so ``hasattr`` and star imports behave."""

    def __getattr__(name: str) -> Any:
        entry = aliases.get(name)
        if entry is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new, obj = entry
        warn_deprecated(f"{module}.{name}", new)
        return obj

    return __getattr__
