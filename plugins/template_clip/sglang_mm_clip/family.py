"""The ``clip`` family: HF's ``CLIPImageProcessorPil`` (CLIP, LLaVA 1.5), composed by the core.

Resize the shortest edge to ``shortest_edge`` (Pillow's bicubic), keep the centre
``crop_size``², rescale by 1/255 and normalize: ``[3, crop_size, crop_size]`` float32, and
``(crop_size // patch_size)²`` image tokens per placeholder. No kernel of its own."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from sglang_mm_core import plugin as mm


def _within_cap(width: int, height: int) -> bool:
    """Whether the core's resize takes this output size (HF's has no cap)."""
    return max(width, height) <= mm.DEFAULT_MAX_SIDE and width * height <= mm.DEFAULT_MAX_PIXELS


class ClipParams(mm.FamilyParams):
    """The spec's ``params``, named as in HF's configs; LLaVA 1.5's values by default."""

    image_token_id: int = Field(32000, ge=0, description="The prompt's image placeholder.")
    shortest_edge: int = Field(336, ge=1, le=4096, description="size.shortest_edge.")
    crop_size: int = Field(336, ge=1, description="Side of the centre square kept.")
    patch_size: int = Field(14, ge=1, description="The vision tower's patch side.")
    image_mean: mm.ChannelMean = Field(mm.CLIP_MEAN, description="Per-channel mean.")
    image_std: mm.ChannelStd = Field(mm.CLIP_STD, description="Per-channel std.")

    @model_validator(mode="after")
    def _crop_fits(self) -> ClipParams:
        c, e, ps = self.crop_size, self.shortest_edge, self.patch_size
        if c > e:  # HF would pad the crop with zeros all round
            raise ValueError(f"crop_size {c} exceeds shortest_edge {e}")
        if c % ps:
            raise ValueError(f"crop_size {c} is no multiple of patch_size {ps}")
        return self


class ClipFamily(mm.Family[ClipParams]):
    name: ClassVar[str] = "clip"

    def features(self) -> mm.Features:
        p = self.params
        table = mm.Table.hf(p.image_mean, p.image_std, "pil")
        return mm.Features(table, mm.ChannelPlanes(), resample="pil_bicubic")

    def resized(self, width: int, height: int) -> tuple[int, int]:
        """HF's ``get_resize_output_image_size(default_to_square=False)``, float for float."""
        e = self.params.shortest_edge
        long = int(e * max(width, height) / min(width, height))
        return (e, long) if width <= height else (long, e)

    def plan(self, width: int, height: int) -> mm.Plan:
        p, c = self.params, self.params.crop_size
        rw, rh = self.resized(width, height)
        if not _within_cap(rw, rh):
            raise mm.KernelArgumentError(
                f"a {width}x{height} image resizes to {rw}x{rh}, over the resize cap of "
                f"{mm.DEFAULT_MAX_SIDE} pixels a side and {mm.DEFAULT_MAX_PIXELS} in all"
            )
        crop = ((rw - c) // 2, (rh - c) // 2, c, c)  # HF's center_crop
        side = c // p.patch_size
        return mm.Plan(
            mm.Repeat(p.image_token_id, side * side),
            mm.Geometry(c, c, (side, side)),
            (mm.Part((rw, rh), crop=crop),),
        )

    def accepted_conformance_sizes(self) -> tuple[mm.Size, ...]:
        return tuple(s for s in mm.DEFAULT_CONFORMANCE_SIZES if _within_cap(*self.resized(*s)))

    def rejected_conformance_sizes(self) -> tuple[mm.Size, ...]:
        n = mm.DEFAULT_MAX_SIDE // self.params.shortest_edge + 1  # resizes past the cap
        return ((n, 1), (1, n))
