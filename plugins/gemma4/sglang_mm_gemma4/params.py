"""The Gemma 4 spec's ``params``: HF's image processor names where they exist, the video
processor's with a ``video_`` prefix (``Gemma4VideoProcessor``'s own defaults: 32 frames of 70
soft tokens, normalized with mean 0 and std 1), and the token ids of the image and video
sequences (``config.json``'s, google/gemma-4-*)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sglang_mm_core import plugin as mm

# google/gemma-4-*: config.json's ids (Gemma4Config's defaults).
BOI_TOKEN_ID = 255999
EOI_TOKEN_ID = 258882
IMAGE_TOKEN_ID = 258880
VIDEO_TOKEN_ID = 258884
#: The image token budgets Gemma 4's processors accept.
SUPPORTED_SOFT_TOKENS = (70, 140, 280, 560, 1120)


class Gemma4Params(mm.FamilyParams):
    """Every rule is checked when the spec loads."""

    resample: Literal["pil", "aten_u8"] = Field(
        "pil",
        description="which HF backend the pixels match bit for bit: Gemma4ImageProcessorPil "
        "(Pillow BICUBIC) or Gemma4ImageProcessor (torchvision uint8 bicubic, antialiased)",
    )
    patch_size: int = Field(16, ge=1, le=64)
    max_soft_tokens: int = Field(
        280, description="the image's token budget: one of 70, 140, 280, 560 and 1120"
    )
    pooling_kernel_size: int = Field(3, ge=1, le=8)
    do_rescale: bool = True
    rescale_factor: float = Field(1 / 255, gt=0)
    do_normalize: bool = Field(False, description="Gemma 4 is trained on pixels in [0, 1]")
    image_mean: mm.ChannelMean = (0.0, 0.0, 0.0)
    image_std: mm.ChannelStd = (1.0, 1.0, 1.0)
    image_token_id: int = Field(
        IMAGE_TOKEN_ID, ge=0, description="<|image|>: the prompt's placeholder and soft token"
    )
    boi_token_id: int = Field(BOI_TOKEN_ID, ge=0, description="<boi>, before the soft tokens")
    eoi_token_id: int = Field(EOI_TOKEN_ID, ge=0, description="<eoi>, after them")
    video_token_id: int = Field(
        VIDEO_TOKEN_ID, ge=0, description="<|video|>: a video's placeholder and soft token"
    )
    video_max_soft_tokens: int = Field(
        70, description="each video frame's token budget: one of 70, 140, 280, 560 and 1120"
    )
    video_num_frames: int = Field(
        32, ge=1, description="frames sampled from a video (a video's nframes option overrides)"
    )
    video_do_sample_frames: bool = Field(
        True, description="sample video_num_frames frames; false keeps every frame"
    )
    video_do_normalize: bool = Field(
        True, description="the video processor normalizes (with mean 0, std 1: x / 255)"
    )
    video_image_mean: mm.ChannelMean = (0.0, 0.0, 0.0)
    video_image_std: mm.ChannelStd = (1.0, 1.0, 1.0)
    tokenizer: mm.TokenizerPath | None = Field(
        None,
        description="the model's tokenizer.json (or its directory): the mm:ss timestamp text "
        "written before each video frame; videos are refused without it",
    )

    @property
    def max_patches(self) -> int:
        """Patches every image is padded to: ``max_soft_tokens * pooling_kernel_size**2``."""
        return self.max_soft_tokens * self.pooling_kernel_size**2

    @property
    def video_max_patches(self) -> int:
        """Patches every video frame is padded to."""
        return self.video_max_soft_tokens * self.pooling_kernel_size**2

    @model_validator(mode="after")
    def _consistent(self) -> Gemma4Params:
        for name in ("max_soft_tokens", "video_max_soft_tokens"):
            if getattr(self, name) not in SUPPORTED_SOFT_TOKENS:
                raise ValueError(
                    f"{name} must be one of {SUPPORTED_SOFT_TOKENS} (what Gemma 4's "
                    f"processors accept), got {getattr(self, name)}"
                )
        ids = {
            "image_token_id": self.image_token_id,
            "boi_token_id": self.boi_token_id,
            "eoi_token_id": self.eoi_token_id,
            "video_token_id": self.video_token_id,
        }
        if len(set(ids.values())) != len(ids):
            raise ValueError(
                f"the image and video sequences' token ids must be distinct, got {ids}"
            )
        return self
