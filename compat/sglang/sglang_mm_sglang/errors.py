"""The extension raises `ValueError` for bad input; sglang-mm raises its typed `MmError`
classes. Here each error is both: a class per kind that subclasses the core's class and
`ValueError`, so ``except ValueError`` (SGLang's callers) and ``except DecodeError`` (ours) both
catch it, with the same message and structured fields. Classes that already are a
`ValueError` (`KernelArgumentError`) pass unchanged, as does `PluginError` (a bug in a plugin,
not bad input)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from sglang_mm_core.errors import (
    DecodeError,
    FetchError,
    LayoutError,
    LimitError,
    MmError,
    MmRequestError,
    SpecError,
)

P = ParamSpec("P")
R = TypeVar("R")


class SpecValueError(SpecError, ValueError):
    """A bad spec JSON, or a bad thread count in the environment."""


class FetchValueError(FetchError, ValueError):
    """A source that could not be fetched."""


class DecodeValueError(DecodeError, ValueError):
    """Bytes that are not a decodable image of a supported format."""


class LimitValueError(LimitError, ValueError):
    """An image or request over a limit (the limit is named)."""


class LayoutValueError(LayoutError, ValueError):
    """Prompt ids and images that do not fit together."""


class RequestValueError(MmRequestError, ValueError):
    """Any other request the API cannot serve as sent."""


# Most specific first: the first base the error is an instance of decides its class.
_AS_VALUE_ERROR: tuple[tuple[type[MmError], type[MmError]], ...] = (
    (DecodeError, DecodeValueError),
    (LimitError, LimitValueError),
    (FetchError, FetchValueError),
    (LayoutError, LayoutValueError),
    (SpecError, SpecValueError),
    (MmRequestError, RequestValueError),
)


def as_value_error(err: MmError) -> MmError:
    """``err`` as the class of this module for its kind (message, item and fields kept), or
    ``err`` itself when it already is a `ValueError` or is not a bad-input error."""
    if isinstance(err, ValueError):
        return err
    for base, cls in _AS_VALUE_ERROR:
        if isinstance(err, base):
            out = cls.__new__(cls, err.message)
            out.__dict__.update(err.__dict__)
            Exception.__init__(out, err.message)
            return out
    return err


def value_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` raising `as_value_error` of its `MmError`; the signature is kept (``__wrapped__``)
    so ``inspect.signature`` shows the extension's parameters."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except MmError as err:
            out = as_value_error(err)
            if out is err:
                raise
            raise out.with_traceback(err.__traceback__) from None

    return wrapper


__all__ = [
    "DecodeValueError",
    "FetchValueError",
    "LayoutValueError",
    "LimitValueError",
    "RequestValueError",
    "SpecValueError",
    "as_value_error",
    "value_errors",
]
