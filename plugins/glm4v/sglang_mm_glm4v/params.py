"""The `glm4v` spec params: one model for GLM-4.1V (``glm4v``), GLM-4.5V (``glm4v_moe``) and
GLM-4.6V (``glm46v``), with HF's names where its processors have them (``size``'s
``shortest_edge`` / ``longest_edge`` are ``min_pixels`` / ``max_pixels``, as in the
``qwen_vl`` family). The defaults are GLM-4.1V's; `GLM4V_MOE` and `GLM46V` hold the others."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from sglang_mm_core.plugin import (
    CLIP_MEAN,
    CLIP_STD,
    ChannelMean,
    ChannelStd,
    FamilyParams,
    TokenizerPath,
)

# Pixel counts are compared as Python ints and divided as doubles: keep them exact doubles.
_MAX_EXACT = 2**53


class Glm4vParams(FamilyParams):
    """Spec ``params`` of the ``glm4v`` family (docs/families/glm4v.md)."""

    patch_size: int = Field(14, gt=0, le=1024, description="Vision patch side in pixels.")
    merge_size: int = Field(2, gt=0, le=64, description="Patches merged per side into a token.")
    temporal_patch_size: int = Field(
        2, gt=0, le=64, description="Frames per patch; a still image repeats."
    )
    min_pixels: int = Field(
        112 * 112,
        gt=0,
        le=_MAX_EXACT,
        description="size.shortest_edge: smart_resize's lower bound, over temporal_patch_size "
        "frames (the checkpoints' and the class's 12544).",
    )
    max_pixels: int = Field(
        9633792,
        gt=0,
        le=_MAX_EXACT,
        description="size.longest_edge: smart_resize's upper bound, over temporal_patch_size "
        "frames (the checkpoints' 9633792; the HF class default is 28*28*15000).",
    )
    image_mean: ChannelMean = Field(CLIP_MEAN, description="Per-channel mean (CLIP's).")
    image_std: ChannelStd = Field(CLIP_STD, description="Per-channel std, none zero (CLIP's).")
    resample: Literal["pil", "aten_u8"] = Field(
        "aten_u8",
        description="The image processor backend matched bit for bit: Glm4vImageProcessorPil "
        "(Pillow BICUBIC) or the torchvision Glm4vImageProcessor (HF v5's default). Videos "
        "always match the video processor, which is torchvision.",
    )
    pil_pass_order: Literal["pillow13", "pillow12"] = Field(
        "pillow13", description="Pass order of the `pil` resampler (Pillow >= 13, or older)."
    )
    image_token_id: int = Field(
        151343,
        ge=0,
        description="<|image|>: the image placeholder, and every image token "
        "of an image or a video frame.",
    )
    image_start_token_id: int = Field(151339, ge=0, description="<|begin_of_image|>.")
    image_end_token_id: int = Field(151340, ge=0, description="<|end_of_image|>.")
    strict_layout: bool = Field(
        True,
        description="Each image placeholder must sit between <|begin_of_image|> and "
        "<|end_of_image|>, each video placeholder between <|begin_of_video|> and "
        "<|end_of_video|>, as the chat template writes them.",
    )
    # -- video (docs/families/glm4v.md, "Video") ---------------------------------------------
    video_token_id: int = Field(151344, ge=0, description="<|video|>: the video placeholder.")
    video_start_token_id: int = Field(151341, ge=0, description="<|begin_of_video|>.")
    video_end_token_id: int = Field(151342, ge=0, description="<|end_of_video|>.")
    video_sampling: Literal["glm4v", "glm46v"] = Field(
        "glm4v",
        description="Frame sampling: Glm4vVideoProcessor's (video_fps within "
        "video_max_duration) or Glm46VVideoProcessor's (a rate chosen by the duration).",
    )
    video_fps: float = Field(
        2.0, gt=0, allow_inf_nan=False, description="Glm4vVideoProcessor's fps (glm4v sampling)."
    )
    video_max_duration: int = Field(
        300, gt=0, description="Glm4vVideoProcessor's max_duration in seconds (glm4v sampling)."
    )
    video_min_pixels: int = Field(
        112 * 112, gt=0, le=_MAX_EXACT, description="The video processor's size.shortest_edge."
    )
    video_max_pixels: int = Field(
        28 * 28 * 2 * 30000,
        gt=0,
        le=_MAX_EXACT,
        description="The video processor's size.longest_edge, over all the sampled frames.",
    )
    video_decoder: Literal["torchcodec", "pyav"] = Field(
        "torchcodec",
        description="How the reference read the frames: torchcodec (transformers' default, and "
        "SGLang) decodes every sampled index, the sampler's repeated last one included; "
        "transformers' pyav reader decodes a repeated index once, so the resize counts one "
        "frame fewer.",
    )
    timestamps: Literal["glm4v", "glm46v"] = Field(
        "glm4v",
        description="The text after each video frame: Glm4vProcessor's whole seconds ('3') or "
        "Glm46VProcessor's ('3.0 seconds').",
    )
    tokenizer: TokenizerPath | None = Field(
        None,
        description="The model's tokenizer.json (or its directory), for the video timestamps; "
        "without it videos are refused.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Glm4vParams:
        if self.min_pixels > self.max_pixels:
            raise ValueError(
                f"min_pixels ({self.min_pixels}) must not exceed max_pixels ({self.max_pixels})"
            )
        if self.video_min_pixels > self.video_max_pixels:
            raise ValueError(
                f"video_min_pixels ({self.video_min_pixels}) must not exceed video_max_pixels "
                f"({self.video_max_pixels})"
            )
        ids = {
            "image_token_id": self.image_token_id,
            "image_start_token_id": self.image_start_token_id,
            "image_end_token_id": self.image_end_token_id,
            "video_token_id": self.video_token_id,
            "video_start_token_id": self.video_start_token_id,
            "video_end_token_id": self.video_end_token_id,
        }
        if len(set(ids.values())) != len(ids):
            raise ValueError(f"the image and video token ids must all differ: {ids}")
        return self

    @property
    def factor(self) -> int:
        """The side multiple of smart_resize."""
        return self.patch_size * self.merge_size


#: GLM-4.1V (``glm4v``): the defaults.
GLM4V: dict[str, Any] = {}
#: GLM-4.5V (``glm4v_moe``): Glm4vMoeConfig's token ids; its processors are GLM-4.1V's.
GLM4V_MOE: dict[str, Any] = {"image_token_id": 151363, "video_token_id": 151364}
#: GLM-4.6V (``glm46v``): Glm46VConfig's ids, Glm46VVideoProcessor's sampling and
#: Glm46VProcessor's timestamps.
GLM46V: dict[str, Any] = {
    "video_start_token_id": 151361,
    "video_end_token_id": 151362,
    "video_sampling": "glm46v",
    "timestamps": "glm46v",
}

__all__ = ["GLM4V", "GLM4V_MOE", "GLM46V", "Glm4vParams"]
