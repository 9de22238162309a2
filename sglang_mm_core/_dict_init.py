"""An ``__init__`` for frozen dataclasses built on every request.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``,
a call per field; the carriers of a request (a dozen objects) spent microseconds of GIL time
on it. `dict_init`, applied over ``@dataclass``, replaces that ``__init__`` with one of the
same signature that writes the fields straight into the instance dict (type checkers still
see the dataclass's own). Instances stay frozen: assignment still raises
``FrozenInstanceError``."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


def dict_init(cls: T) -> T:
    """Replace a (frozen, slot-less) dataclass's ``__init__`` with the fast one."""
    params, body = ["self"], ["d = self.__dict__"]
    env: dict[str, Any] = {}
    for f in fields(cls):
        if not f.init:  # set as the dataclass's own __init__ sets it
            if f.default is not MISSING:
                env[f"_default_{f.name}"] = f.default
                body.append(f"d[{f.name!r}] = _default_{f.name}")
            elif f.default_factory is not MISSING:
                env[f"_factory_{f.name}"] = f.default_factory
                body.append(f"d[{f.name!r}] = _factory_{f.name}()")
            continue
        if f.default is not MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
            body.append(f"d[{f.name!r}] = {f.name}")
        elif f.default_factory is not MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=None")
            body.append(f"d[{f.name!r}] = _factory_{f.name}() if {f.name} is None else {f.name}")
        else:
            params.append(f.name)
            body.append(f"d[{f.name!r}] = {f.name}")
    source = f"def __init__({', '.join(params)}):\n    " + "\n    ".join(body)
    exec(source, env)  # the way dataclasses itself builds __init__
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[misc]
    return cls


__all__ = ["dict_init"]
