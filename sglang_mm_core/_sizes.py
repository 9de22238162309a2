"""Target-size rules that more than one family's reference shares, step for step in the
reference's own arithmetic (Python ints, and the IEEE doubles of Python's ``/``; ``round``
ties to even), with its errors raised as `KernelArgumentError`."""

from __future__ import annotations

import math
import operator

from .errors import KernelArgumentError

#: Largest aspect ratio the references accept (exactly 200 passes).
MAX_ASPECT_RATIO = 200


def temporal_smart_resize(
    num_frames: int,
    height: int,
    width: int,
    *,
    temporal_factor: int,
    factor: int,
    min_pixels: int,
    max_pixels: int,
) -> tuple[int, int]:
    """``(height', width')`` of the temporal-aware ``smart_resize`` that transformers 5.23's
    GLM-4.1V / GLM-4.5V / GLM-4.6V image and video processors and Qwen3-VL's video processor
    share: a side under ``factor`` first scales the image up (both sides by ``max(factor / h,
    factor / w)``, truncated with ``int()``); each side is then rounded to a multiple of
    ``factor``, and the pixel budget is checked over the whole clip, ``round(num_frames /
    temporal_factor) * temporal_factor * h * w``, against ``[min_pixels, max_pixels]`` (when
    over, the sides are scaled by ``sqrt(num_frames * h * w / max_pixels)`` and floored, at
    least ``factor``; when under, by ``sqrt(min_pixels / (num_frames * h * w))`` and rounded
    up). An image is ``num_frames = temporal_factor``.

    Where the reference raises (fewer than ``temporal_factor`` frames, an aspect ratio over
    200 after the upscale) or fails (a zero side or factor: a division by zero), this raises
    `KernelArgumentError` naming the value."""
    n = _count("num_frames", num_frames)
    h = _count("height", height)
    w = _count("width", width)
    tf = _count("temporal_patch_size", temporal_factor)
    f = _count("factor", factor)
    low = _count("min_pixels", min_pixels)
    high = _count("max_pixels", max_pixels)
    if f == 0 or tf == 0 or high == 0:
        raise KernelArgumentError(
            f"factor ({f}), temporal_patch_size ({tf}) and max_pixels ({high}) must be positive"
        )
    if n < tf:
        raise KernelArgumentError(
            f"num_frames ({n}) is fewer than temporal_patch_size ({tf}): the reference refuses it"
        )
    if h == 0 or w == 0:
        raise KernelArgumentError(f"image of {width}x{height} pixels has a zero side")
    if h < f or w < f:
        scale = max(f / h, f / w)
        h, w = int(h * scale), int(w * scale)
        if h == 0 or w == 0:  # unreachable for f >= 1, kept against float surprises
            raise KernelArgumentError(f"image of {width}x{height} pixels upscales to a zero side")
    ratio = max(h, w) / min(h, w)
    if ratio > MAX_ASPECT_RATIO:
        shown = str(int(ratio)) if ratio.is_integer() else repr(ratio)
        raise KernelArgumentError(
            f"image of {width}x{height} pixels has aspect ratio {shown}, over the limit of 200"
        )
    h_bar = round(h / f) * f
    w_bar = round(w / f) * f
    t_bar = round(n / tf) * tf
    if t_bar * h_bar * w_bar > high:
        beta = math.sqrt((n * h * w) / high)
        h_bar = max(f, math.floor(h / beta / f) * f)
        w_bar = max(f, math.floor(w / beta / f) * f)
    elif t_bar * h_bar * w_bar < low:
        beta = math.sqrt(low / (n * h * w))
        h_bar = math.ceil(h * beta / f) * f
        w_bar = math.ceil(w * beta / f) * f
    return h_bar, w_bar


def _count(name: str, value: int) -> int:
    """``value`` as a non-negative int (what the references' sizes and bounds are)."""
    try:
        n = operator.index(value)
    except TypeError:
        n = -1
    if n < 0:
        raise KernelArgumentError(f"{name} must be a non-negative integer: {value!r}")
    return n


__all__ = ["MAX_ASPECT_RATIO", "temporal_smart_resize"]
