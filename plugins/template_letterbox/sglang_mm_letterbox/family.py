"""The ``letterbox`` family: the template of a family with its own Rust kernel.

Every image becomes ``PIL.ImageOps.pad(image, (size, size), BICUBIC, color=fill)``: resized to
fit the square with its aspect ratio kept, centred on a canvas of ``fill``; then HF's numpy
rescale (1/255) and normalize, as ``[3, size, size]`` float32, and ``(size // patch_size)²``
image tokens per placeholder. `kernel` calls the family's Rust function, the worked example
of a kernel of one's own (the core composes the same feature with `Part.on_canvas`); the
table is declared here, and the core derives the compact form from it."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from sglang_mm_core import plugin as mm

from . import _native

Byte = Annotated[int, Field(ge=0, le=255)]


class LetterboxParams(mm.FamilyParams):
    """The spec's ``params``; every rule is checked when the spec is loaded."""

    image_token_id: int = Field(32000, ge=0, description="The prompt's image placeholder.")
    size: int = Field(336, ge=1, le=4096, description="Side of the square canvas.")
    patch_size: int = Field(14, ge=1, description="The vision tower's patch side.")
    fill: tuple[Byte, Byte, Byte] = Field(
        (122, 116, 104),
        description="Canvas colour, RGB (default: CLIP's mean as LLaVA pads, int(255 * m)).",
    )
    image_mean: mm.ChannelMean = Field(mm.CLIP_MEAN, description="Per-channel mean.")
    image_std: mm.ChannelStd = Field(mm.CLIP_STD, description="Per-channel std.")

    @model_validator(mode="after")
    def _patches_tile_the_canvas(self) -> LetterboxParams:
        if self.size % self.patch_size:
            raise ValueError(f"size {self.size} is not a multiple of patch_size {self.patch_size}")
        return self


class LetterboxFamily(mm.Family[LetterboxParams]):
    name: ClassVar[str] = "letterbox"

    def features(self) -> mm.Features:
        # No `resample`: the family's `kernel` writes the feature, through this same table.
        p = self.params
        return mm.Features(mm.Table.hf(p.image_mean, p.image_std, "pil"), mm.ChannelPlanes())

    def contained(self, width: int, height: int) -> tuple[int, int]:
        """``PIL.ImageOps.contain``'s size for the square: the long side becomes ``size``,
        the other ``round(short / long * size)`` (Python's round, half to even)."""
        s = self.params.size
        if width > height:
            return s, round(height / width * s)
        if width < height:
            return round(width / height * s), s
        return s, s

    def plan(self, width: int, height: int) -> mm.Plan:
        p = self.params
        w, h = self.contained(width, height)
        if w == 0 or h == 0:
            raise mm.KernelArgumentError(
                f"a {width}x{height} image fits a {p.size}x{p.size} square as {w}x{h} pixels: "
                f"nothing of it would remain (an aspect ratio of {2 * p.size}:1 or more)"
            )
        side = p.size // p.patch_size
        return mm.Plan(
            mm.Repeat(p.image_token_id, side * side),
            mm.Geometry(p.size, p.size, (side, side)),
            # The kernel centres the resized image on the canvas; the part states the resize
            # and the extent.
            (mm.Part((w, h), pad_to=(p.size, p.size)),),
        )

    def kernel(
        self, image: npt.NDArray[np.uint8], plan: mm.Plan, *, codes: bool, threads: int
    ) -> npt.NDArray[Any]:
        p = self.params
        ((w, h),) = (part.size for part in plan.parts)
        # ``PIL.ImageOps.pad``'s paste position, centring 0.5 (Python's round, half to even).
        offset = (round((p.size - w) * 0.5), round((p.size - h) * 0.5))
        return _native.letterbox(
            image,
            p.size,
            (w, h),
            offset,
            p.fill,
            p.image_mean,
            p.image_std,
            codes=codes,
            threads=threads,
        )

    def accepted_conformance_sizes(self) -> tuple[mm.Size, ...]:
        return tuple(s for s in mm.DEFAULT_CONFORMANCE_SIZES if min(self.contained(*s)) > 0)

    def rejected_conformance_sizes(self) -> tuple[mm.Size, ...]:
        n = 2 * self.params.size + 1  # the short side rounds to 0 pixels
        return ((n, 1), (1, n))
