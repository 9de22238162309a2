"""The geometry of one image, as SGLang's ``deepseek_v41_image_processing`` plans it: the pixel
size of the patch grid (``best_width x best_height``), the token grid after the aligner and the
contain-fit that puts the image on its canvas. Every step keeps the reference's own arithmetic
(Python floats, ``int()`` truncation, ``math.ceil``/``floor``, ``round`` half to even), because a
pixel size one patch off changes the token count."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sglang_mm_core.plugin import KernelArgumentError

from .params import DeepseekV41Params

IMAGE_START, IMAGE, IMAGE_NEW_LINE, IMAGE_END = range(4)


def num_image_tokens(n_llm_h: int, n_llm_w: int) -> int:
    """LLM positions of a token grid: a start, each row and its newline, an end."""
    return n_llm_h * (n_llm_w + 1) + 2


def token_grid(n_vit_h: int, n_vit_w: int, downsample_ratio: int) -> tuple[int, int]:
    """``(n_llm_h, n_llm_w)``: the aligner's ceil-divided patch grid."""
    return math.ceil(n_vit_h / downsample_ratio), math.ceil(n_vit_w / downsample_ratio)


def token_types(n_llm_h: int, n_llm_w: int) -> list[int]:
    """The role of each position: ``IMAGE_START``, rows of ``IMAGE`` each closed by
    ``IMAGE_NEW_LINE``, ``IMAGE_END``."""
    return [IMAGE_START, *([IMAGE] * n_llm_w + [IMAGE_NEW_LINE]) * n_llm_h, IMAGE_END]


@dataclass(frozen=True)
class Grid:
    """What an image of a given size becomes."""

    #: The canvas (and patch grid) size in pixels, multiples of ``patch_size``.
    width: int
    height: int
    n_vit_h: int
    n_vit_w: int
    n_llm_h: int
    n_llm_w: int
    #: Stretched to the canvas (``max_wh_ratio`` reached) rather than letterboxed.
    stretch: bool
    #: ``(width, height)`` of the resized image on the canvas, and its top-left corner.
    content: tuple[int, int]
    at: tuple[int, int]

    @property
    def tokens(self) -> int:
        return num_image_tokens(self.n_llm_h, self.n_llm_w)


def _llm(best_h: int, best_w: int, p: int, d: int) -> tuple[int, int]:
    return math.ceil((best_h // p) / d), math.ceil((best_w // p) / d)


def _fit_budget(height: float, width: float, p: int, d: int, budget: int) -> tuple[int, int]:
    """The largest aspect-preserving ``(best_h, best_w)`` whose token grid fits ``budget``:
    the reference's closed form, with its single-column and single-row collapses."""
    r = height / width
    w_tokens = math.sqrt((budget - 2) / r + 0.25) - 0.5
    h_tokens = w_tokens * r
    cell = p * d
    if w_tokens < 1.0:
        return (budget - 2) // 2 * cell, cell
    if h_tokens < 1.0:
        return cell, (budget - 3) * cell
    beta = min(math.floor(w_tokens) * cell / width, math.floor(h_tokens) * cell / height)
    return math.floor(height * beta / p) * p, math.floor(width * beta / p) * p


def plan_grid(width: int, height: int, params: DeepseekV41Params) -> Grid:
    """The plan of an upright ``width x height`` image. A budget the reference's closed form
    cannot meet (its ``assert``) is a `KernelArgumentError` naming the size."""
    p, d, budget = params.patch_size, params.downsample_ratio, params.max_image_tokens
    ratio = params.max_wh_ratio
    w: float = width
    h: float = height
    if ratio is not None and w > h * ratio:
        w = h * ratio
    if 0 < w * h < params.min_pixels:
        up = (params.min_pixels / (w * h)) ** 0.5
        w, h = int(w * up), int(h * up)
    best_w, best_h = math.ceil(w / p) * p, math.ceil(h / p) * p
    n_llm_h, n_llm_w = _llm(best_h, best_w, p, d)
    if num_image_tokens(n_llm_h, n_llm_w) > budget:
        if w <= 0 or h <= 0:
            raise KernelArgumentError(
                f"a {width}x{height} image is planned as {w}x{h} pixels: it has no area left"
            )
        best_h, best_w = _fit_budget(h, w, p, d, budget)
        n_llm_h, n_llm_w = _llm(best_h, best_w, p, d)
        if num_image_tokens(n_llm_h, n_llm_w) > budget:
            raise KernelArgumentError(
                f"a {width}x{height} image does not fit max_image_tokens {budget}: the "
                f"reference's plan gives {num_image_tokens(n_llm_h, n_llm_w)} tokens"
            )
    if best_w <= 0 or best_h <= 0:
        raise KernelArgumentError(
            f"a {width}x{height} image is planned as {best_w}x{best_h} pixels: nothing to patch"
        )
    stretch = ratio is not None and width >= ratio * height
    content, at = ((best_w, best_h), (0, 0)) if stretch else contain(width, height, best_w, best_h)
    return Grid(best_w, best_h, best_h // p, best_w // p, n_llm_h, n_llm_w, stretch, content, at)


def contain(
    width: int, height: int, canvas_w: int, canvas_h: int
) -> tuple[tuple[int, int], tuple[int, int]]:
    """``PIL.ImageOps.pad``'s geometry, centring 0.5: the size ``ImageOps.contain`` resizes
    the image to (one side may round to 0: nothing is pasted), and where it is pasted."""
    im_ratio, dest_ratio = width / height, canvas_w / canvas_h
    size = (canvas_w, canvas_h)
    if im_ratio > dest_ratio:
        size = (canvas_w, round(height / width * canvas_w))
    elif im_ratio < dest_ratio:
        size = (round(width / height * canvas_h), canvas_h)
    if size[0] != canvas_w:
        return size, (round((canvas_w - size[0]) * 0.5), 0)
    if size[1] != canvas_h:
        return size, (0, round((canvas_h - size[1]) * 0.5))
    return size, (0, 0)
