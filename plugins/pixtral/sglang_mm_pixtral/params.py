"""The `pixtral` spec params: one model for Pixtral-12B and Mistral 3 (Mistral Small 3.1 and
3.2), with Pixtral-12B's values as defaults (`MISTRAL3` holds the others). Names follow HF's
``preprocessor_config.json`` / ``processor_config.json`` (``size.longest_edge`` is flattened to
``longest_edge``)."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from sglang_mm_core.plugin import CLIP_MEAN, CLIP_STD, DEFAULT_MAX_SIDE, FamilyParams

Triple = tuple[float, float, float]


class PixtralParams(FamilyParams):
    """Spec ``params`` of the ``pixtral`` family (docs/families/pixtral.md)."""

    patch_size: int = Field(16, gt=0, description="Vision patch side in pixels (Mistral 3: 14).")
    spatial_merge_size: int = Field(
        1, gt=0, description="Patches merged per side into one token (Mistral 3: 2)."
    )
    longest_edge: int = Field(
        1024, gt=0, description="Longest side after the resize (Mistral 3: 1540)."
    )
    image_mean: Triple = Field(CLIP_MEAN, description="Per-channel mean.")
    image_std: Triple = Field(CLIP_STD, description="Per-channel std, none zero.")
    resample: Literal["pil", "aten_u8"] = Field(
        "pil",
        description="Bicubic reference: HF's PIL backend (PixtralImageProcessorPil) or its "
        "torchvision backend (PixtralImageProcessor).",
    )
    image_token_id: int = Field(10, ge=0, description="[IMG]: the placeholder and each patch.")
    image_break_token_id: int = Field(12, ge=0, description="[IMG_BREAK]: ends each row.")
    image_end_token_id: int = Field(13, ge=0, description="[IMG_END]: ends the last row.")

    @field_validator("image_mean", "image_std")
    @classmethod
    def _finite(cls, v: Triple, info: Any) -> Triple:
        for c, x in enumerate(v):
            if not math.isfinite(x):
                raise ValueError(f"channel {c} is not finite: {x}")
            if info.field_name == "image_std" and x == 0:
                raise ValueError(f"channel {c} is zero")
        return v

    @model_validator(mode="after")
    def _rules(self) -> PixtralParams:
        ids = {self.image_token_id, self.image_break_token_id, self.image_end_token_id}
        if len(ids) != 3:
            raise ValueError("image_token_id, image_break_token_id and image_end_token_id differ")
        if self.max_side > DEFAULT_MAX_SIDE:
            raise ValueError(
                f"longest_edge {self.longest_edge} gives sides up to {self.max_side}, above the "
                f"kernel's {DEFAULT_MAX_SIDE}"
            )
        return self

    @property
    def factor(self) -> int:
        """Pixels per token side: ``patch_size * spatial_merge_size`` (what HF's processor hands
        its image processor as ``patch_size``)."""
        return self.patch_size * self.spatial_merge_size

    @property
    def max_side(self) -> int:
        """The longest side an output can have: ``longest_edge`` rounded up to whole tokens."""
        return -(-self.longest_edge // self.factor) * self.factor


PIXTRAL_12B: dict[str, Any] = {}
MISTRAL3: dict[str, Any] = {"patch_size": 14, "spatial_merge_size": 2, "longest_edge": 1540}
