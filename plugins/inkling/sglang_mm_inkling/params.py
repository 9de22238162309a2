"""The spec's ``params`` for the Inkling family, with every rule checked when the spec is
parsed (never at request time). Field names are those of the spec table in
docs/families/inkling.md."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import Field, Strict, ValidationInfo, field_validator, model_validator

from sglang_mm_core.plugin import FamilyParams

_CAP = "rescale_image_max_upscaled_long_edge"
StrictInt = Annotated[int, Strict()]


class InklingParams(FamilyParams):
    """Patch size, the rescale rule, the placeholder id and the frames per patch."""

    patch_size: StrictInt = Field(40, description="Side of a square patch in pixels (> 0).")
    rescale_image_frac: float | None = Field(
        2.0,
        description="Scale both sides by this factor before patching (finite, > 0); "
        "null = no rescale.",
    )
    rescale_image_max_upscaled_long_edge: StrictInt | None = Field(
        2048,
        description="Cap on the upscaled long edge (> 0); only with rescale_image_frac > 1. "
        "Never shrinks an image already above it. null = no cap; left out, it is dropped "
        "when the fraction does not upscale.",
    )
    image_token_id: StrictInt = Field(
        200054, ge=0, description="The image placeholder id; each one expands to the patches."
    )
    temporal_patch_size: StrictInt = Field(
        2, ge=1, description="Frames per patch in the feature tensor (the image repeated)."
    )

    @model_validator(mode="before")
    @classmethod
    def _default_cap_only_when_upscaling(cls, data: Any) -> Any:
        # The default cap would have no effect without an upscaling fraction; drop it there
        # rather than reject a spec that only said `rescale_image_frac: null`.
        if isinstance(data, dict) and _CAP not in data and "rescale_image_frac" in data:
            frac = data["rescale_image_frac"]
            if not (isinstance(frac, int | float) and frac > 1):
                return {**data, _CAP: None}
        return data

    @field_validator("patch_size")
    @classmethod
    def _positive_patch(cls, v: int) -> int:
        if v <= 0:
            raise ValueError(f"patch_size must be greater than zero, got {v}")
        return v

    @field_validator("rescale_image_frac")
    @classmethod
    def _finite_positive_frac(cls, v: float | None) -> float | None:
        if v is not None and not (math.isfinite(v) and v > 0):
            raise ValueError(f"rescale_image_frac must be finite and greater than zero, got {v}")
        return v

    @field_validator(_CAP)
    @classmethod
    def _cap_needs_upscaling(cls, v: int | None, info: ValidationInfo) -> int | None:
        if v is None:
            return v
        if v <= 0:
            raise ValueError(f"{_CAP} must be greater than zero, got {v}")
        if "rescale_image_frac" not in info.data:
            return v  # the fraction itself is invalid and already reported
        frac = info.data["rescale_image_frac"]
        if frac is None or frac <= 1:
            raise ValueError(
                f"{_CAP}={v} caps upscaling and is only allowed with rescale_image_frac above 1, "
                f"got rescale_image_frac={frac}"
            )
        return v


__all__ = ["InklingParams"]
