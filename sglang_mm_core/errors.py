"""One exception hierarchy for the whole product, so a server can map any failure to a status
with a single ``except`` per class, and every message says which item and which rule."""

from __future__ import annotations


class MmError(Exception):
    """Root of every error sglang-mm raises on purpose."""

    def __init__(self, message: str, *, item: int | None = None, source_kind: str | None = None):
        super().__init__(message)
        self.message = message
        self.item = item
        self.source_kind = source_kind

    def __str__(self) -> str:
        return self.message

    def at_item(self, item: int, source_kind: str | None = None) -> MmError:
        """The same error, attributed to request item ``item`` (message prefixed once)."""
        kind = source_kind or self.source_kind
        where = f"image {item}" + (f" ({kind})" if kind else "")
        message = self.message if self.item is not None else f"{where}: {self.message}"
        return type(self)(message, item=item, source_kind=kind)


class SpecError(MmError):
    """The spec document is invalid (unknown family, bad field, bad JSON)."""


class PluginError(MmError):
    """A plugin is broken or conflicts with another (duplicate family name, bad hook result)."""


class MmRequestError(MmError):
    """The request cannot be served as sent: the "400" of a server."""


class FetchError(MmRequestError):
    """A source could not be fetched, or the fetch policy refused it."""


class DecodeError(MmRequestError):
    """The bytes are not a decodable image of a supported format."""


class LimitError(MmRequestError):
    """A request, stream or image limit was exceeded (the limit is named)."""


class LayoutError(MmRequestError):
    """The prompt and the media items do not fit together (placeholders, markers, coverage)."""


class UnsupportedModalityError(MmRequestError):
    """The family does not accept this kind of media."""


class KernelArgumentError(MmRequestError, ValueError):
    """A kernel was called with an argument out of its domain (shape, size, option)."""


__all__ = [
    "DecodeError",
    "FetchError",
    "KernelArgumentError",
    "LayoutError",
    "LimitError",
    "MmError",
    "MmRequestError",
    "PluginError",
    "SpecError",
    "UnsupportedModalityError",
]
