"""The Kimi spec's ``params``: transformers' ``Kimi_K25ImageProcessor`` names where it has
them (``patch_size``, ``merge_size``, ``max_patches``, ``size``, ``image_mean``,
``image_std``), the checkpoint's ``media_proc_cfg`` meaning where it differs (its
``in_patch_limit`` is ``max_patches``, its ``patch_limit_on_one_side`` is
``size.max_height``), and the token ids of moonshotai/Kimi-K2.5's tokenizer."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from sglang_mm_core import plugin as mm

# moonshotai/Kimi-K2.5 (and Kimi-K3): the tokenizer's media tokens; config.json's
# media_placeholder_token_id is <|media_pad|>.
MEDIA_BEGIN_TOKEN_ID = 163602
MEDIA_CONTENT_TOKEN_ID = 163603
MEDIA_END_TOKEN_ID = 163604
MEDIA_PAD_TOKEN_ID = 163605
HALF = (0.5, 0.5, 0.5)


class MaxSize(BaseModel):
    """HF's ``size``: the most *patches* a side may have (not pixels); both equal, as
    ``Kimi_K25ImageProcessor`` requires."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_height: int = Field(ge=1, le=4096)
    max_width: int = Field(ge=1, le=4096)

    @model_validator(mode="after")
    def _square(self) -> MaxSize:
        if self.max_height != self.max_width:
            raise ValueError(
                f"size must have equal max_height and max_width (as Kimi_K25ImageProcessor "
                f"requires), got {self.max_height} and {self.max_width}"
            )
        return self


def checkpoint_table(
    mean: tuple[float, float, float], std: tuple[float, float, float]
) -> npt.NDArray[np.float32]:
    """``[3, 256]``: the checkpoint's ``normalize`` (media_utils.py) of every uint8 value:
    ``x / 255.0`` in float64 cast to float32, then ``x -= mean`` and ``x *= 1 / std`` in
    place against float64 arrays (each step computed in float64, stored as float32)."""
    x = (np.arange(256, dtype=np.uint8)[:, None].repeat(3, axis=1) / 255.0).astype(np.float32)
    x -= np.array(mean)
    x *= 1.0 / np.array(std)
    return np.ascontiguousarray(x.T)


class TransparentBgConfig(BaseModel):
    """The checkpoint's ``TransparentBgConfig`` (Kimi K3's ``media_utils.py``): the background
    transparent images are composited onto, its defaults the dataclass's. This plugin never
    composites (every source that would be is refused); the config decides which sources those
    are, and is kept so that the spec states the checkpoint it mirrors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pattern: Literal["white", "black", "gray", "chessboard"] = "black"
    chessboard_square_size: int = Field(16, ge=1)
    chessboard_square_on_top_left: bool = True
    chessboard_white_value: int = Field(255, ge=0, le=255)
    chessboard_gray_value: int = Field(200, ge=0, le=255)


class KimiParams(mm.FamilyParams):
    """Every rule is checked when the spec loads."""

    generation: Literal["k2_5", "k3"] = Field(
        "k2_5",
        description="the model generation: Kimi K2.5 (moonshotai/Kimi-K2.5) or Kimi K3 "
        "(moonshotai/Kimi-K3: the max_output_tokens loop of its resize, each image's "
        "'image WxH' text, its transparent-background settings)",
    )
    resample: Literal["pil", "aten_u8"] = Field(
        "pil",
        description="which reference the pixels match bit for bit: 'pil', the checkpoint's "
        "own KimiK25VisionProcessor (media_utils.py: Pillow BICUBIC, numpy normalize), or "
        "'aten_u8', transformers' Kimi_K25ImageProcessor (torchvision uint8 bicubic, "
        "antialiased)",
    )
    patch_size: int = Field(14, ge=1, le=64, description="side of a vision patch, in pixels")
    merge_size: int = Field(
        2, ge=1, le=8, description="patches merged per side into one token (merge_kernel_size)"
    )
    max_patches: int = Field(
        16384, ge=1, description="the patch budget of the resize (the checkpoint's in_patch_limit)"
    )
    size: MaxSize = Field(
        default_factory=lambda: MaxSize(max_height=512, max_width=512),
        description="most patches per side (the checkpoint's patch_limit_on_one_side)",
    )
    image_mean: mm.ChannelMean = HALF
    image_std: mm.ChannelStd = HALF
    image_token_id: int = Field(
        MEDIA_PAD_TOKEN_ID, ge=0, description="<|media_pad|>: the placeholder and image token"
    )
    video_token_id: int | None = Field(
        None,
        ge=0,
        description="<|kimi_k25_video_placeholder|>'s id in the model's tokenizer: a video's "
        "placeholder and video token (videos are refused without it)",
    )
    media_begin_token_id: int = Field(MEDIA_BEGIN_TOKEN_ID, ge=0, description="<|media_begin|>")
    media_content_token_id: int = Field(
        MEDIA_CONTENT_TOKEN_ID, ge=0, description="<|media_content|>"
    )
    media_end_token_id: int = Field(MEDIA_END_TOKEN_ID, ge=0, description="<|media_end|>")
    video_fps: float = Field(
        2.0, gt=0, allow_inf_nan=False, description="frames sampled per second of video (fps)"
    )
    video_max_patches: int = Field(
        4096, ge=1, description="the patch budget of each video frame (the video processor's)"
    )
    temporal_patch_size: int = Field(
        4, ge=1, le=64, description="frames per video chunk (temporal_merge_kernel_size)"
    )
    tokenizer: mm.TokenizerPath | None = Field(
        None,
        description="the model's tokenizer.json (or its folder): video timestamps' ids, and "
        "Kimi K3's 'image WxH' text",
    )
    transparent_bg_config: TransparentBgConfig | None = Field(
        None,
        description="Kimi K3 only: the checkpoint's transparent_bg_config (null: transparent "
        "images are converted to RGB, not composited)",
    )
    transparent_bg_fill_stage: Literal["before_resize", "after_resize"] = Field(
        "before_resize",
        description="Kimi K3 only: the checkpoint's transparent_bg_fill_stage, when the image "
        "leaves the mode Pillow opened it in (and is composited): before or after the resize",
    )

    @property
    def max_size_per_side(self) -> int:
        return self.size.max_height

    @model_validator(mode="after")
    def _exact(self) -> KimiParams:
        if self.video_token_id is not None and self.video_token_id == self.image_token_id:
            raise ValueError("video_token_id must differ from image_token_id")
        if self.generation == "k3":
            self._k3_rules()
        elif self.transparent_bg_config is not None or self.transparent_bg_fill_stage != (
            "before_resize"
        ):
            raise ValueError(
                "transparent_bg_config / transparent_bg_fill_stage are Kimi K3's settings: "
                "set generation 'k3' (Kimi K2.5 converts every image to RGB when it loads it)"
            )
        if self.resample == "pil":
            table = mm.Table.hf(self.image_mean, self.image_std, "pil").values
            ours = checkpoint_table(self.image_mean, self.image_std)
            if not np.array_equal(table.view(np.uint32), ours.view(np.uint32)):
                raise ValueError(
                    f"image_mean {self.image_mean} / image_std {self.image_std}: the "
                    "checkpoint's normalize (subtract the mean, multiply by 1/std, each in "
                    "float64) differs from the core's numpy table for these values, so the "
                    "'pil' mode cannot match it bit for bit (every Kimi checkpoint uses 0.5)"
                )
        return self

    def _k3_rules(self) -> None:
        if self.resample != "pil":
            raise ValueError(
                "Kimi K3 is served by its checkpoint's processor only (resample 'pil'): "
                "transformers has no Kimi K3 class to match"
            )
        if self.tokenizer is None:
            raise ValueError(
                "Kimi K3 writes each image's 'image WxH' text between <|media_begin|> and "
                "<|media_content|>: set tokenizer to the model's tokenizer.json"
            )
        if self.max_patches < self.merge_size**2:
            raise ValueError(
                f"max_patches {self.max_patches} is under one token ({self.merge_size}**2 "
                "patches): Kimi K3's max_output_tokens would be 0, which no image meets (its "
                "resize loop fails)"
            )
        if self.video_token_id is not None:
            raise ValueError("Kimi K3 takes images only: video_token_id must be null")


__all__ = [
    "MEDIA_BEGIN_TOKEN_ID",
    "MEDIA_CONTENT_TOKEN_ID",
    "MEDIA_END_TOKEN_ID",
    "MEDIA_PAD_TOKEN_ID",
    "KimiParams",
    "MaxSize",
    "TransparentBgConfig",
    "checkpoint_table",
]
