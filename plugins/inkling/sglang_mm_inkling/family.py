"""The Inkling family: one token per ``patch_size`` square patch of the (rescaled) image, each
patch normalised to bfloat16 with the CLIP constants. A composition of the core's kernels:
Pillow's Lanczos to the rescaled size, a float32 table rounded to bfloat16 (padding from the
sample ``-1``), padded channels-last patches. Only the rescale rule and the grid are Inkling's."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sglang_mm_core.common import scaled_dims
from sglang_mm_core.plugin import (
    CLIP_MEAN,
    CLIP_STD,
    DEFAULT_MAX_PIXELS,
    DecodeDefaults,
    Family,
    Features,
    Geometry,
    HwcPatches,
    KernelArgumentError,
    LimitError,
    ModelDir,
    Part,
    Plan,
    Repeat,
    SpecError,
    Table,
    Tensor,
)

from .hf import spec_from_hf
from .params import InklingParams

#: Most pixels a rescaled image may have (Pillow's bomb threshold, as for a decoded image),
#: so a huge ``rescale_image_frac`` is refused before anything is resized.
MAX_RESCALED_PIXELS = DEFAULT_MAX_PIXELS
#: Most padded grid pixels (``nph * ps * npw * ps``): twice that threshold, so the largest
#: decodable image fits while a giant ``patch_size`` is refused before anything is allocated.
MAX_GRID_PIXELS = 2 * DEFAULT_MAX_PIXELS


def patch_grid(height: int, width: int, patch_size: int) -> tuple[int, int]:
    """``(nph, npw)``: ``ceil(h / ps)`` rows and ``floor(w / ps) + 1`` columns (the model
    always gets one column more than ``w / ps``)."""
    return -(-height // patch_size), width // patch_size + 1


class InklingFamily(Family[InklingParams]):
    """Spec name ``inkling``; see docs/families/inkling.md."""

    name: ClassVar[str] = "inkling"
    # The reference opens the bytes with Pillow and calls .convert("RGB"): no EXIF transpose.
    decode_defaults: ClassVar[DecodeDefaults] = DecodeDefaults(alpha="drop", exif_orientation=False)

    def scaled_size(self, width: int, height: int) -> tuple[int, int]:
        """``(w, h)`` the patches are cut from: the rescale rule (unchanged without one)."""
        p = self.params
        if p.rescale_image_frac is None:
            return width, height
        return scaled_dims(
            width, height, p.rescale_image_frac, p.rescale_image_max_upscaled_long_edge
        )

    def plan(self, width: int, height: int) -> Plan:
        """The rescaled size, cut into a grid one column wider than the image, one token per
        patch; the part pads the image to the grid with the table's pad value."""
        if width <= 0 or height <= 0:
            raise KernelArgumentError(f"image size must be positive, got {width}x{height}")
        p = self.params
        w, h = self.scaled_size(width, height)
        if (w, h) != (width, height) and w * h > MAX_RESCALED_PIXELS:
            raise LimitError(
                f"rescaling {width}x{height} by {p.rescale_image_frac!r} gives {w}x{h}, over "
                f"the limit of {MAX_RESCALED_PIXELS} pixels"
            )
        ps = p.patch_size
        nph, npw = patch_grid(h, w, ps)
        if nph * npw * ps * ps > MAX_GRID_PIXELS:
            raise LimitError(
                f"a {nph}x{npw} grid of {ps}x{ps} patches exceeds the limit of "
                f"{MAX_GRID_PIXELS} output pixels"
            )
        return Plan(
            tokens=Repeat(p.image_token_id, nph * npw),
            geometry=Geometry(h, w, (nph, npw)),
            parts=(Part((w, h), pad_to=(npw * ps, nph * ps)),),
        )

    def features(self) -> Features:
        """``[num_patches, temporal_patch_size, ps, ps, 3]`` bfloat16 bits; more than one frame
        is one read-only broadcast view (copy it, ``np.array(...)``, before writing to it)."""
        p = self.params
        table = Table(CLIP_MEAN, CLIP_STD, arithmetic="float32", dtype="bfloat16", pad_sample=-1)
        return Features(
            table, HwcPatches(p.patch_size, p.temporal_patch_size), resample="pil_lanczos"
        )

    def aux(self, plan: Plan) -> Mapping[str, Tensor]:
        return {"num_patches": Tensor(np.array([plan.content], dtype=np.int64), "int64")}

    @classmethod
    def spec_from_hf(
        cls, model: ModelDir | str | Path | Mapping[str, Mapping[str, Any]], **options: Any
    ) -> dict[str, Any]:
        """A spec for an Inkling checkpoint's directory; keys accepted are listed in
        docs/families/inkling.md, anything else that could change the pixels is refused.
        Inkling has a single backend, so there are no options."""
        if options:
            raise SpecError(
                f"the inkling family's spec_from_hf takes no options, got {sorted(options)}"
            )
        return spec_from_hf(model)


__all__ = ["MAX_GRID_PIXELS", "MAX_RESCALED_PIXELS", "InklingFamily", "patch_grid"]
