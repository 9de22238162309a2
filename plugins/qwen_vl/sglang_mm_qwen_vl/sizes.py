"""`smart_resize`, the target-size rule alone: the family's plans use it, and so do callers
that size images without processing them (token budgets, SGLang's extension API in
`sglang_mm_sglang`).

Every step is the reference's IEEE double arithmetic in the reference's order (Python floats
are those doubles; sides and bounds are converted exactly, being at most 2^53), and ``round``
is Python's own, which ties to even as the references do."""

from __future__ import annotations

import math
import operator
from typing import Literal

from sglang_mm_core.plugin import KernelArgumentError

#: Largest pixel count whose double is exact, so that ``int / int`` in the references and the
#: quotient of the two doubles here round the same single value.
_EXACT = 1 << 53
#: Largest aspect ratio the references accept (exactly 200 passes).
_MAX_RATIO = 200.0
#: The variant as the messages name it.
_VARIANTS = {"hf": "Hf", "sglang": "Sglang"}


def smart_resize(
    height: int,
    width: int,
    factor: int,
    min_pixels: int,
    max_pixels: int,
    variant: Literal["hf", "sglang"] = "hf",
) -> tuple[int, int]:
    """``(height', width')``: the size the family resizes a ``height x width`` image to, by
    HuggingFace's rule (``"hf"``: ``max(factor, .)`` only after scaling down) or SGLang's
    (``"sglang"``: ``max(factor, .)`` after rounding, none after scaling down); the params'
    ``smart_resize``, docs/families/qwen_vl.md. An aspect ratio over 200, a zero side, a size
    over 2^53 pixels, or a size SGLang's rule would make empty is a `KernelArgumentError`
    naming the size."""
    height, width = _count("height", height), _count("width", width)
    factor = _count("factor", factor)
    min_pixels, max_pixels = _count("min_pixels", min_pixels), _count("max_pixels", max_pixels)
    label = _VARIANTS.get(variant) if isinstance(variant, str) else None
    if label is None:
        raise KernelArgumentError(
            f"unknown smart_resize variant {_quoted(variant)} (expected hf or sglang)"
        )
    if height == 0 or width == 0:
        raise KernelArgumentError(f"image of {width}x{height} pixels has a zero side")
    if factor == 0 or min_pixels == 0 or max_pixels == 0:
        raise KernelArgumentError(
            f"smart_resize needs positive factor ({factor}), min_pixels ({min_pixels}) and "
            f"max_pixels ({max_pixels})"
        )
    area = height * width
    if area > _EXACT:
        raise KernelArgumentError(
            f"image of {width}x{height} pixels is too large to size (over 2^53 pixels)"
        )
    if min_pixels > _EXACT or max_pixels > _EXACT:
        raise KernelArgumentError(
            f"min_pixels ({min_pixels}) and max_pixels ({max_pixels}) must be at most 2^53"
        )
    h, w, f = float(height), float(width), float(factor)
    ratio = max(h, w) / min(h, w)
    if ratio > _MAX_RATIO:
        raise KernelArgumentError(
            f"image of {width}x{height} pixels has aspect ratio {_display(ratio)}, "
            "over the limit of 200"
        )
    hb = round(h / f) * factor
    wb = round(w / f) * factor
    sglang = variant == "sglang"
    if sglang:
        hb, wb = max(hb, factor), max(wb, factor)
    if hb * wb > max_pixels:
        beta = math.sqrt(float(area) / float(max_pixels))
        hb = math.floor(h / beta / f) * factor
        wb = math.floor(w / beta / f) * factor
        if not sglang:
            hb, wb = max(hb, factor), max(wb, factor)
    elif hb * wb < min_pixels:
        beta = math.sqrt(float(min_pixels) / float(area))
        hb = math.ceil(h * beta / f) * factor
        wb = math.ceil(w * beta / f) * factor
    if hb == 0 or wb == 0:
        raise KernelArgumentError(
            f"smart_resize ({label}) sizes the {width}x{height} image to {wb}x{hb}, which is empty"
        )
    return hb, wb


def _count(name: str, value: int) -> int:
    """``value`` as a non-negative int (what the references' sizes and bounds are)."""
    try:
        n = operator.index(value)
    except TypeError:
        n = -1
    if n < 0:
        raise KernelArgumentError(f"smart_resize {name} must be a non-negative integer: {value!r}")
    return n


def _display(x: float) -> str:
    """A double as the messages print it: shortest round-trip digits, no ``.0`` on a whole
    number (a ratio above 200 with a fraction is below 2^52, so never in exponent form)."""
    return str(int(x)) if x.is_integer() else repr(x)


def _quoted(name: object) -> str:
    return '"' + str(name).replace("\\", "\\\\").replace('"', '\\"') + '"'


__all__ = ["smart_resize"]
