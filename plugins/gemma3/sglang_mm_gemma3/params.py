"""The Gemma 3 spec's ``params``: HF's ``preprocessor_config.json`` names where they exist, the
token ids of the image sequence, and the ids of the pan-and-scan phrases."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sglang_mm_core import plugin as mm

# google/gemma-3-*-it: the tokenizer's special ids and the "\n\n" piece.
BOI_TOKEN_ID = 255999
EOI_TOKEN_ID = 256000
IMAGE_SOFT_TOKEN_ID = 262144
DOUBLE_NEWLINE_TOKEN_ID = 108


class Gemma3Params(mm.FamilyParams):
    """Every rule is checked when the spec loads."""

    resample: Literal["pil", "aten_u8"] = Field(
        "pil",
        description="which HF backend the pixels match bit for bit: Gemma3ImageProcessorPil "
        "(Pillow BILINEAR) or Gemma3ImageProcessor (torchvision uint8 bilinear, antialiased)",
    )
    size: int = Field(896, ge=1, le=4096, description="side of the square every image becomes")
    rescale_factor: float = Field(1 / 255, gt=0)
    image_mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    image_std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    image_token_id: int = Field(
        BOI_TOKEN_ID, ge=0, description="<start_of_image>: the prompt's placeholder, kept"
    )
    image_soft_token_id: int = Field(IMAGE_SOFT_TOKEN_ID, ge=0, description="<image_soft_token>")
    eoi_token_id: int = Field(EOI_TOKEN_ID, ge=0, description="<end_of_image>")
    double_newline_token_id: int = Field(
        DOUBLE_NEWLINE_TOKEN_ID, ge=0, description='the tokenizer\'s "\\n\\n" piece'
    )
    mm_tokens_per_image: int = Field(256, ge=1, description="soft tokens per image or crop")
    do_pan_and_scan: bool = False
    pan_and_scan_min_crop_size: int = Field(256, ge=1)
    pan_and_scan_max_num_crops: int = Field(4, ge=2)
    pan_and_scan_min_ratio_to_activate: float = Field(1.2, gt=0)
    pan_and_scan_prefix_ids: tuple[int, ...] = Field(
        (), description='ids of "Here is the original image " (pan and scan)'
    )
    pan_and_scan_infix_ids: tuple[int, ...] = Field(
        (), description='ids of " and here are some crops to help you see better " (pan and scan)'
    )
    pan_and_scan_separator_ids: tuple[int, ...] = Field(
        (), description='ids of " " between the crops\' sequences (pan and scan)'
    )

    @model_validator(mode="after")
    def _consistent(self) -> Gemma3Params:
        if any(s == 0 for s in self.image_std):
            raise ValueError("image_std must be non-zero in every channel")
        ids = {
            "image_token_id": self.image_token_id,
            "image_soft_token_id": self.image_soft_token_id,
            "eoi_token_id": self.eoi_token_id,
            "double_newline_token_id": self.double_newline_token_id,
        }
        if len(set(ids.values())) != len(ids):
            raise ValueError(f"the image sequence's token ids must be distinct, got {ids}")
        if self.do_pan_and_scan and not (
            self.pan_and_scan_prefix_ids and self.pan_and_scan_infix_ids
        ):
            raise ValueError(
                "do_pan_and_scan needs pan_and_scan_prefix_ids and pan_and_scan_infix_ids (the "
                "token ids of the phrases Gemma3Processor inserts; spec_from_hf fills them in)"
            )
        phrases = (
            self.pan_and_scan_prefix_ids
            + self.pan_and_scan_infix_ids
            + self.pan_and_scan_separator_ids
        )
        if self.image_token_id in phrases or any(i < 0 for i in phrases):
            raise ValueError("pan-and-scan phrase ids must be >= 0 and not the image token")
        return self
