"""The Gemma 4 family: every image is resized, keeping its aspect ratio, to the largest size
whose sides are multiples of ``pooling_kernel_size * patch_size`` (48) within a budget of
``max_soft_tokens * pooling_kernel_size**2`` patches, rescaled to [0, 1] (no normalize), and
cut into 16x16 patches, each one vector with the channels last; the patches are zero-padded to
the budget, with their ``(x, y)`` positions (-1 on the padding). Its placeholder ``<|image|>``
becomes ``<boi>`` + ``<|image|>`` x soft tokens + ``<eoi>``. The pixels are a composition of
the core's kernels: bicubic resize, HF's rescale table, the `PatchVectors` writer."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .params import Gemma4Params


def aspect_ratio_preserving_size(
    height: int, width: int, patch_size: int, max_patches: int, pooling_kernel_size: int
) -> tuple[int, int]:
    """HF's ``get_aspect_ratio_preserving_size``: the resized ``(H, W)``, with its float
    arithmetic, its edge cases (a side that floors to 0 becomes one multiple, the other the
    aspect ratio's floor in multiples, capped at the longest side) and its errors, raised as
    `KernelArgumentError`."""
    target_px = max_patches * patch_size**2
    factor = math.sqrt(target_px / (height * width))
    side = pooling_kernel_size * patch_size
    h = math.floor(factor * height / side) * side
    w = math.floor(factor * width / side) * side
    if h == 0 and w == 0:
        raise mm.KernelArgumentError(
            f"a {width}x{height} image resizes to 0x0 under Gemma 4's patch budget"
        )
    longest = (max_patches // pooling_kernel_size**2) * side
    if h == 0:
        h, w = side, min(math.floor(width / height) * side, longest)
    elif w == 0:
        h, w = min(math.floor(height / width) * side, longest), side
    if h * w > target_px:
        raise mm.KernelArgumentError(
            f"a {width}x{height} image resizes to {w}x{h}, over the budget of {max_patches} "
            f"patches of {patch_size}"
        )
    return h, w


def position_ids(rows: int, cols: int, max_patches: int) -> npt.NDArray[np.int64]:
    """``[max_patches, 2]``: each patch's ``(x, y)`` in row-major order, then ``-1`` rows."""
    out = np.full((max_patches, 2), -1, dtype=np.int64)
    y, x = np.divmod(np.arange(rows * cols, dtype=np.int64), cols)
    out[: rows * cols, 0] = x
    out[: rows * cols, 1] = y
    return out


def mm_token_type_ids(input_ids: npt.ArrayLike, p: Gemma4Params) -> npt.NDArray[np.int64]:
    """HF's ``mm_token_type_ids`` for an expanded prompt: 1 on image tokens, 0 elsewhere."""
    soft: npt.NDArray[np.bool_] = np.asarray(input_ids) == p.image_token_id
    return soft.astype(np.int64)


class Gemma4Family(mm.Family[Gemma4Params]):
    name: ClassVar[str] = "gemma4"
    # As HF's loaders: alpha composited onto white, EXIF orientation applied.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )

    def features(self) -> mm.Features:
        p = self.params
        resample, arithmetic = mm.hf_backend(p.resample, "bicubic")
        mean, std = (p.image_mean, p.image_std) if p.do_normalize else ((0.0,) * 3, (1.0,) * 3)
        if not p.do_normalize:
            # Rescale alone: numpy's float64 multiply (PIL backend), torch's float32 one.
            arithmetic = "numpy" if p.resample == "pil" else "float32"
        scale = p.rescale_factor if p.do_rescale else 1.0
        return mm.Features(
            table=mm.Table(mean, std, arithmetic=arithmetic, rescale_factor=scale),
            writer=mm.PatchVectors(p.patch_size, pad_to=p.max_patches),
            resample=resample,
        )

    def target_size(self, height: int, width: int) -> tuple[int, int]:
        """The resized ``(H, W)`` of an upright ``width x height`` image, as HF computes it."""
        p = self.params
        return aspect_ratio_preserving_size(
            height, width, p.patch_size, p.max_patches, p.pooling_kernel_size
        )

    def plan(self, width: int, height: int) -> mm.Plan:
        p = self.params
        h, w = self.target_size(height, width)
        k = p.pooling_kernel_size
        rows, cols = h // p.patch_size, w // p.patch_size
        n = rows * cols // k**2
        tokens = mm.Explicit((p.boi_token_id, *[p.image_token_id] * n, p.eoi_token_id), (1, n + 1))
        return mm.Plan(tokens, mm.Geometry(h, w, (rows // k, cols // k)))

    def aux(self, plan: mm.Plan) -> Mapping[str, mm.Tensor]:
        p = self.params
        g = plan.geometry
        rows, cols = g.height // p.patch_size, g.width // p.patch_size
        n = rows * cols // p.pooling_kernel_size**2
        return {
            "image_position_ids": mm.Tensor(position_ids(rows, cols, p.max_patches), "int64"),
            "num_soft_tokens_per_image": mm.Tensor(np.array([n], dtype=np.int64), "int64"),
        }

    @classmethod
    def spec_from_hf(
        cls,
        model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory (``resample`` and ``token_ids`` as
        `sglang_mm_gemma4.hf.spec_from_hf` takes them)."""
        from .hf import spec_from_hf

        return spec_from_hf(model, **options)
