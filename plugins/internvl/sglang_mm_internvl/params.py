"""The `internvl` spec params: one model for InternVL 3 and 3.5 (`OpenGVLab/InternVL3-*-hf`,
`InternVL3_5-*-HF`), named as HF's ``preprocessor_config.json`` / ``processor_config.json``
name them, with InternVL 3's values as defaults (`INTERNVL3_5` holds the other token ids)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from sglang_mm_core.plugin import ChannelMean, ChannelStd, FamilyParams

Triple = tuple[float, float, float]

#: HF's ``IMAGENET_DEFAULT_MEAN`` / ``IMAGENET_DEFAULT_STD`` (what InternVL normalizes with).
IMAGENET_DEFAULT_MEAN: Triple = (0.485, 0.456, 0.406)
IMAGENET_DEFAULT_STD: Triple = (0.229, 0.224, 0.225)

#: Most grid tiles one image may take (HF has no bound; with the output cap below it keeps one
#: image's memory bounded).
MAX_PATCHES_CAP = 64
#: Most bytes of float32 ``pixel_values`` one image may become (grid plus thumbnail).
MAX_OUTPUT_BYTES = 1 << 30


class InternVLParams(FamilyParams):
    """Spec ``params`` of the ``internvl`` family (docs/families/internvl.md)."""

    tile_size: int = Field(448, gt=0, le=4096, description="Side of one square tile (`size`).")
    crop_to_patches: bool = Field(True, description="Tile the image (InternVLProcessor: on).")
    min_patches: int = Field(1, ge=1, le=MAX_PATCHES_CAP, description="Fewest grid tiles.")
    max_patches: int = Field(12, ge=1, le=MAX_PATCHES_CAP, description="Most grid tiles.")
    image_mean: ChannelMean = Field(IMAGENET_DEFAULT_MEAN, description="Per-channel mean.")
    image_std: ChannelStd = Field(IMAGENET_DEFAULT_STD, description="Per-channel std, none zero.")
    image_seq_length: int = Field(256, gt=0, description="Image tokens per tile.")
    image_token_id: int = Field(151667, ge=0, description="`<IMG_CONTEXT>`, the placeholder.")
    start_image_token_id: int = Field(151665, ge=0, description="`<img>`, before the tiles.")
    end_image_token_id: int = Field(151666, ge=0, description="`</img>`, after the tiles.")
    resample: Literal["pil", "aten_u8"] = Field(
        "aten_u8",
        description="Bicubic reference: HF's PIL backend or its torchvision (default) backend.",
    )
    tiling: Literal["hf", "model_card"] = Field(
        "hf",
        description="Grid rule: HF's GotOcr2 processor, or the model card's dynamic_preprocess.",
    )
    pil_pass_order: Literal["pillow13", "pillow12"] = Field(
        "pillow13", description="Pass order of the `pil` resampler (Pillow >= 13, or older)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> InternVLParams:
        if self.min_patches > self.max_patches:
            raise ValueError(
                f"min_patches ({self.min_patches}) must not exceed max_patches "
                f"({self.max_patches}): no grid would qualify"
            )
        ids = {
            "image_token_id": self.image_token_id,
            "start_image_token_id": self.start_image_token_id,
            "end_image_token_id": self.end_image_token_id,
        }
        if len(set(ids.values())) != len(ids):
            raise ValueError(f"image, start_image and end_image token ids must differ: {ids}")
        most = (self.max_patches + 1) * 3 * self.tile_size**2 * 4
        if most > MAX_OUTPUT_BYTES:
            raise ValueError(
                f"max_patches {self.max_patches} tiles of {self.tile_size} pixels (plus the "
                f"thumbnail) would let one image make {most} bytes of pixel_values, over the "
                f"cap of {MAX_OUTPUT_BYTES}"
            )
        if self.tiling == "model_card" and self.resample != "pil":
            raise ValueError(
                "tiling 'model_card' resizes with Pillow (torchvision T.Resize on a PIL image): "
                "it needs resample 'pil'"
            )
        return self


INTERNVL3: dict[str, Any] = {}  # the defaults
#: InternVL 3.5 (Qwen3 tokenizer): the same image path, other token ids.
INTERNVL3_5: dict[str, Any] = {
    "image_token_id": 151671,
    "start_image_token_id": 151669,
    "end_image_token_id": 151670,
}

__all__ = [
    "IMAGENET_DEFAULT_MEAN",
    "IMAGENET_DEFAULT_STD",
    "INTERNVL3",
    "INTERNVL3_5",
    "MAX_OUTPUT_BYTES",
    "MAX_PATCHES_CAP",
    "InternVLParams",
]
