"""The target-size rule alone, for callers that size images without processing them (token
budgets, SGLang's extension API in `sglang_mm_core.compat.sglang`)."""

from __future__ import annotations

from typing import Literal

from . import _native


def smart_resize(
    height: int,
    width: int,
    factor: int,
    min_pixels: int,
    max_pixels: int,
    variant: Literal["hf", "sglang"] = "hf",
) -> tuple[int, int]:
    """``(height', width')``: the size the family resizes a ``height x width`` image to, by
    HuggingFace's rule or SGLang's (the params' ``smart_resize``; docs/families/qwen_vl.md).
    An aspect ratio over 200, a zero side, or a size SGLang's rule would make empty is a
    `KernelArgumentError` naming the size."""
    return _native.smart_resize(height, width, factor, min_pixels, max_pixels, variant)


__all__ = ["smart_resize"]
