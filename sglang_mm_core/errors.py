"""One exception hierarchy for the whole product, so a server can map any failure to a status
with a single ``except`` per class, and every message says which item and which rule.

Besides the message, errors carry what a program needs without parsing it: ``item`` and
``source_kind`` (which request item), ``status`` (the HTTP status, when the error was rebuilt
from a server answer), and per class the structured fields of `fields` (``LimitError``: the
limit's name, its value and the offending value; ``DecodeError``: the detected format and a
refused source mode)."""

from __future__ import annotations

from typing import Any


class MmError(Exception):
    """Root of every error sglang-mm raises on purpose."""

    #: The names of the class's structured fields (keyword arguments and attributes).
    field_names: tuple[str, ...] = ()

    def __init__(
        self,
        message: str,
        *,
        item: int | None = None,
        source_kind: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.item = item
        self.source_kind = source_kind
        self.status = status

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its attributes, not its __init__ arguments (subclasses add keyword-only
        # ones), so that every error crosses process boundaries (multiprocessing, Ray) whole.
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))

    @property
    def fields(self) -> dict[str, Any]:
        """The structured fields that are set (a server sends them in its error body)."""
        values = {name: getattr(self, name, None) for name in self.field_names}
        return {k: v for k, v in values.items() if v is not None}

    #: Which list of the request ``item`` indexes: ``"image"`` or ``"video"``.
    modality: str = "image"

    def at_item(
        self, item: int, source_kind: str | None = None, modality: str = "image"
    ) -> MmError:
        """The same error, attributed to item ``item`` of the request's ``modality`` list
        (message prefixed once); every other attribute (structured fields, status) is kept."""
        kind = source_kind or self.source_kind
        where = f"{modality} {item}" + (f" ({kind})" if kind else "")
        message = self.message if self.item is not None else f"{where}: {self.message}"
        out = type(self).__new__(type(self), message)
        out.__dict__.update(self.__dict__)
        Exception.__init__(out, message)
        out.message, out.item, out.source_kind = message, item, kind
        out.modality = modality
        return out


def _rebuild(cls: type[MmError], message: str, state: dict[str, Any]) -> MmError:
    err = cls.__new__(cls, message)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class SpecError(MmError):
    """The spec document is invalid (unknown family, bad field, bad JSON)."""


class PluginError(MmError):
    """A plugin is broken or conflicts with another (duplicate family name, bad hook result)."""


class MmRequestError(MmError):
    """The request cannot be served as sent: the "400" of a server."""


class FetchError(MmRequestError):
    """A source could not be fetched, or the fetch policy refused it."""


class DecodeError(MmRequestError):
    """The bytes are not a decodable image of a supported format.

    ``format``: the format detected from the magic bytes (``"PNG"``; for a format we do not
    decode, its name, e.g. ``"TIFF"``), None when nothing was recognised. ``unsupported``:
    True when the format is not one we decode (else the data was broken). ``source_mode``:
    the image's source mode label (``"RGBA"``, ``"P+transparency"``) when the spec's
    ``decode.source_modes`` refused it, else None."""

    field_names = ("format", "unsupported", "source_mode")

    def __init__(
        self,
        message: str,
        *,
        format: str | None = None,
        unsupported: bool | None = None,
        source_mode: str | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(message, **kw)
        self.format = format
        self.unsupported = unsupported
        self.source_mode = source_mode


class LimitError(MmRequestError):
    """A request, stream or image limit was exceeded (the limit is named).

    ``limit``: the limit's name as the spec writes it (``"max_image_pixels"``), ``limit_value``
    its value, ``value`` the offending value; None where a limit has no name (an internal
    allocation cap)."""

    field_names = ("limit", "limit_value", "value")

    def __init__(
        self,
        message: str,
        *,
        limit: str | None = None,
        limit_value: int | None = None,
        value: int | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(message, **kw)
        self.limit = limit
        self.limit_value = limit_value
        self.value = value


class LayoutError(MmRequestError):
    """The prompt and the media items do not fit together (placeholders, markers, coverage)."""


class UnsupportedModalityError(MmRequestError):
    """The family does not accept this kind of media."""


class RequestCancelledError(MmRequestError):
    """The request was cancelled (its deadline passed, or its client left) while its work
    ran: fetches, and kernels between bands, stop with it. Whoever cancelled has answered the
    request already; this only ends the work, and nothing it had made is returned."""


class KernelArgumentError(MmRequestError, ValueError):
    """A kernel was called with an argument out of its domain (shape, size, option)."""


class CodecError(MmError, ValueError):
    """Bytes that are not a well-formed sglang-mm output (a server answer or an output file)."""


class LaunchError(MmError, ValueError):
    """A server setting that cannot be honoured (the message names the option)."""


class RidError(MmError, LookupError):
    """``push_result``/``push_error`` for a rid that is unknown, not yet parked, or already
    answered (the embedded server)."""


class ServerError(MmError):
    """An error answer of the server that is not one of the library's request errors: 422
    (malformed), 503 (queue full, shutting down; see ``retry_after``), 5xx, or a host's
    rejection (what `sglang_mm_core.client.Client` raises for it)."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        error_type: str,
        item: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, item=item, status=status)
        self.status: int = status
        self.error_type = error_type
        self.retry_after = retry_after


class DatasetError(MmError):
    """A dataset job cannot run as asked: a bad manifest, output folder or option. (A bad
    *sample* never raises: its row carries its error.)"""


class ManifestError(DatasetError):
    """The manifest cannot be read (missing file, unknown format, missing column), or one of
    its rows is malformed (then only that row carries it)."""


class MissingExtraError(DatasetError):
    """An optional package the job needs is not installed."""


__all__ = [
    "CodecError",
    "DatasetError",
    "DecodeError",
    "FetchError",
    "KernelArgumentError",
    "LaunchError",
    "LayoutError",
    "LimitError",
    "ManifestError",
    "MissingExtraError",
    "MmError",
    "MmRequestError",
    "PluginError",
    "RequestCancelledError",
    "RidError",
    "ServerError",
    "SpecError",
    "UnsupportedModalityError",
]
