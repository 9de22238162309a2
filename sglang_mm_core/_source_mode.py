"""The mode Pillow opens an image in, from its header alone, and the decode policy built on it
(the spec's ``decode.source_modes``).

A reference that works on the image Pillow opened, before any ``convert`` (Kimi K3 resizes in
the image's own mode and composites transparency after the resize), treats each mode its own
way. A family that reproduces some modes bit for bit and not others lists the ones it does;
the driver refuses every other image, naming its mode, before a pixel is decoded."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from . import _native
from .errors import DecodeError

#: Every source mode label the decoders report, in this order: Pillow's mode, with
#: ``+transparency`` where Pillow puts ``"transparency"`` in the image's ``info``.
SOURCE_MODES: tuple[str, ...] = (
    "1",
    "1+transparency",
    "L",
    "L+transparency",
    "P",
    "P+transparency",
    "RGB",
    "RGB+transparency",
    "RGBA",
    "LA",
    "CMYK",
    "I;16",
    "I;16+transparency",
)
_ORDER = {label: i for i, label in enumerate(SOURCE_MODES)}


@dataclass(frozen=True)
class SourceMode:
    """What Pillow 13's ``Image.open`` makes of an image once its pixels are read: its
    ``mode`` (``"1"``, ``"L"``, ``"P"``, ``"RGB"``, ``"RGBA"``, ``"LA"``, ``"CMYK"``,
    ``"I;16"``), whether ``"transparency"`` is in its ``info`` (a PNG's tRNS chunk on modes
    1, L, I;16, P and RGB, wherever it sits in the file; a GIF's transparent index), and the
    ``format`` (``"PNG"``, ...)."""

    mode: str
    transparency: bool
    format: str

    @property
    def label(self) -> str:
        """The mode, ``+transparency`` appended when there is a transparency entry: the
        spelling of ``decode.source_modes`` (one of `SOURCE_MODES`)."""
        return f"{self.mode}+transparency" if self.transparency else self.mode

    @property
    def has_alpha(self) -> bool:
        """Pillow's own test: an alpha band (``"A" in im.getbands()``) or a transparency
        entry (``"transparency" in im.info``)."""
        return "A" in self.mode or self.transparency


def image_source_mode(data: bytes | bytearray | memoryview) -> SourceMode:
    """The `SourceMode` of encoded image bytes (JPEG, PNG, WebP, GIF, BMP), read from the
    header without decoding a pixel (a PNG's chunks after the image data included). Bytes the
    decoder cannot open raise its `DecodeError`."""
    mode, transparency, fmt = _native.image_source_mode(data)
    return SourceMode(mode, transparency, fmt)


def canonical_source_modes(labels: Iterable[str]) -> tuple[str, ...]:
    """``labels`` checked (each one of `SOURCE_MODES`, at least one) and in `SOURCE_MODES`'
    order without repeats, so that two spellings of one set are one spec; a `ValueError`
    naming an unknown label."""
    got = set()
    for label in labels:
        if label not in _ORDER:
            raise ValueError(f"unknown source mode {label!r} (known: {', '.join(SOURCE_MODES)})")
        got.add(label)
    if not got:
        raise ValueError("source_modes lists no mode: it would refuse every image")
    return tuple(sorted(got, key=_ORDER.__getitem__))


def check_source_mode(
    data: bytes | bytearray | memoryview, accepted: frozenset[str], why: str | None
) -> None:
    """Refuse ``data`` with a `DecodeError` naming its mode when its label is not
    ``accepted`` (``why``: the family's reason, appended)."""
    source = image_source_mode(data)
    label = source.label
    if label in accepted:
        return
    listed = ", ".join(sorted(accepted, key=_ORDER.__getitem__))
    message = (
        f"a {source.format} image of source mode {label!r} is refused: decode.source_modes "
        f"accepts only {listed}"
    )
    if why:
        message += f" ({why})"
    raise DecodeError(message, format=source.format, source_mode=label)


__all__ = [
    "SOURCE_MODES",
    "SourceMode",
    "canonical_source_modes",
    "check_source_mode",
    "image_source_mode",
]
