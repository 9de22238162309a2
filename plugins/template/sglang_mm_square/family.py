"""A fixed-size square family, the pattern of CLIP-style vision towers (LLaVA 1.5 at 336²):
resize every image to ``size``², normalize per channel, feed ``[3, size, size]`` float32, and
expand each placeholder to ``(size / patch_size)²`` image tokens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from sglang_mm_core import plugin as mm

from . import _native


class SquareParams(mm.FamilyParams):
    """The spec's ``params``; every rule is checked when the spec is loaded."""

    image_token_id: int = Field(32000, ge=0, description="the prompt's image placeholder id")
    size: int = Field(336, ge=1, le=4096, description="side of the square the image becomes")
    patch_size: int = Field(14, ge=1, description="vision tower patch side; divides size")
    image_mean: tuple[float, float, float] = mm.CLIP_MEAN
    image_std: tuple[float, float, float] = mm.CLIP_STD

    @model_validator(mode="after")
    def _patches_tile_the_square(self) -> SquareParams:
        if self.size % self.patch_size:
            raise ValueError(f"size {self.size} is not a multiple of patch_size {self.patch_size}")
        if any(s == 0 for s in self.image_std):
            raise ValueError("image_std must be non-zero in every channel")
        return self


class Square(mm.Family):
    name: ClassVar[str] = "square"
    Params: ClassVar[type[mm.FamilyParams]] = SquareParams
    # As HF's loaders: alpha composited onto white, EXIF orientation applied.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )

    def __init__(self, params: mm.FamilyParams) -> None:
        super().__init__(params)
        assert isinstance(self.params, SquareParams)
        self.p = self.params

    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> mm.ProcessedItem:
        p = self.p
        values = _native.process(
            np.ascontiguousarray(image), p.size, p.image_mean, p.image_std, threads
        )
        side = p.size // p.patch_size
        return mm.ProcessedItem(
            feature=mm.Tensor(values, "float32"),
            aux={},
            geometry=mm.Geometry(p.size, p.size, (side, side)),
        )

    def layout(
        self, input_ids: npt.NDArray[np.int64], geometries: Sequence[mm.Geometry]
    ) -> mm.TokenLayout:
        counts = [self.tokens_for(g) for g in geometries]
        return mm.layout_by_placeholder(input_ids, self.p.image_token_id, counts)

    def expected_feature_shape(self, geometry: mm.Geometry) -> tuple[int, ...]:
        # Channel-major pixels, not one row per token: tell the conformance suite the shape.
        return (3, geometry.height, geometry.width)

    def tokens_for(self, geometry: mm.Geometry) -> int:
        gh, gw = geometry.grid
        return gh * gw

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        return (self.p.size // self.p.patch_size) ** 2
