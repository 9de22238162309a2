"""The `qwen_vl` spec params: one model for Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5, with
Qwen2-VL's values as defaults (`QWEN2_VL`, `QWEN3_VL`, `QWEN3_5` hold the others)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from sglang_mm_core.plugin import (
    CLIP_MEAN,
    CLIP_STD,
    IMAGENET_STANDARD_MEAN,
    IMAGENET_STANDARD_STD,
    ChannelMean,
    ChannelStd,
    FamilyParams,
    TokenizerPath,
)

# Pixel counts are compared as doubles by the reference, so they must be exact doubles.
_MAX_EXACT = 2**53

Triple = tuple[float, float, float]


class QwenVLParams(FamilyParams):
    """Spec ``params`` of the ``qwen_vl`` family (docs/families/qwen_vl.md)."""

    patch_size: int = Field(14, gt=0, description="Vision patch side in pixels (Qwen3: 16).")
    merge_size: int = Field(2, gt=0, description="Patches merged per side into one token.")
    temporal_patch_size: int = Field(2, gt=0, description="Frames per patch; a still repeats.")
    min_pixels: int = Field(
        3136, gt=0, le=_MAX_EXACT, description="smart_resize lower bound (Qwen3: 65536)."
    )
    max_pixels: int = Field(
        12845056, gt=0, le=_MAX_EXACT, description="smart_resize upper bound (Qwen3: 16777216)."
    )
    image_mean: ChannelMean = Field(CLIP_MEAN, description="Per-channel mean (Qwen3: 0.5 each).")
    image_std: ChannelStd = Field(CLIP_STD, description="Per-channel std, none zero (Qwen3: 0.5).")
    image_token_id: int = Field(151655, ge=0, description="The image placeholder token.")
    vision_start_token_id: int = Field(151652, ge=0, description="Token before a placeholder.")
    vision_end_token_id: int = Field(151653, ge=0, description="Token after a placeholder.")
    resample: Literal["pil", "aten_u8"] = Field(
        "aten_u8",
        description="Bicubic reference: HF's PIL backend or its torchvision (default) backend.",
    )
    smart_resize: Literal["hf", "sglang"] = Field(
        "hf", description="Target-size rule: HuggingFace's, or SGLang's own variant."
    )
    pil_pass_order: Literal["pillow13", "pillow12"] = Field(
        "pillow13", description="Pass order of the `pil` resampler (Pillow >= 13, or older)."
    )
    strict_layout: bool = Field(
        True, description="Each placeholder must sit between vision_start and vision_end."
    )
    # -- video (docs/families/qwen_vl.md, "Video") ------------------------------------------
    generation: Literal["qwen2_vl", "qwen2_5_vl", "qwen3_vl"] = Field(
        "qwen2_vl",
        description="The model generation, whose video rules apply (Qwen3.5: qwen3_vl).",
    )
    video_token_id: int = Field(151656, ge=0, description="The video placeholder token.")
    video_sampling: Literal["hf", "qwen_vl_utils", "none"] = Field(
        "hf",
        description="Frame sampling: transformers' sample_frames, qwen-vl-utils', or every frame.",
    )
    video_fps: float | None = Field(
        2.0, gt=0, allow_inf_nan=False, description="Frames per second sampled (hf sampling)."
    )
    video_num_frames: int | None = Field(
        None, gt=0, description="Frames sampled instead of video_fps (hf sampling)."
    )
    video_min_frames: int = Field(4, gt=0, description="Fewest frames fps sampling takes (hf).")
    video_max_frames: int = Field(768, gt=0, description="Most frames fps sampling takes (hf).")
    video_min_pixels: int = Field(
        128 * 28 * 28, gt=0, le=_MAX_EXACT, description="Per-frame lower bound (Qwen3: 128*32*32)."
    )
    video_max_pixels: int = Field(
        768 * 28 * 28, gt=0, le=_MAX_EXACT, description="Per-frame upper bound (Qwen3: 768*32*32)."
    )
    video_cap_pixels_per_frame: bool = Field(
        False, description="transformers' cap_pixels_per_frame (hf sampling)."
    )
    tokens_per_second: int = Field(
        2, gt=0, description="Qwen2.5-VL's temporal positions per second of video."
    )
    video_markers: Literal["keep", "replace"] = Field(
        "keep",
        description=(
            "Qwen3-VL: the timestamped expansion keeps the prompt's vision_start/vision_end "
            "around it (transformers >= 5.10) or replaces them (transformers < 5.10)."
        ),
    )
    tokenizer: TokenizerPath | None = Field(
        None,
        description="The model's tokenizer.json (or its directory): Qwen3-VL video timestamps.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> QwenVLParams:
        if self.min_pixels > self.max_pixels:
            raise ValueError(
                f"min_pixels ({self.min_pixels}) must not exceed max_pixels ({self.max_pixels})"
            )
        if self.video_min_pixels > self.video_max_pixels:
            raise ValueError(
                f"video_min_pixels ({self.video_min_pixels}) must not exceed video_max_pixels "
                f"({self.video_max_pixels})"
            )
        if self.video_markers == "replace":
            if self.generation != "qwen3_vl":
                raise ValueError(
                    "video_markers 'replace' is Qwen3-VL's layout (generation qwen3_vl); "
                    f"generation {self.generation} keeps the markers"
                )
            if not self.strict_layout:
                raise ValueError(
                    "video_markers 'replace' needs strict_layout: the markers it replaces must "
                    "be checked to be there"
                )
        if self.video_fps is not None and self.video_num_frames is not None:
            raise ValueError("video_fps and video_num_frames are exclusive: set one to null")
        ids = {
            "image_token_id": self.image_token_id,
            "video_token_id": self.video_token_id,
            "vision_start_token_id": self.vision_start_token_id,
            "vision_end_token_id": self.vision_end_token_id,
        }
        if len(set(ids.values())) != len(ids):
            raise ValueError(
                f"image, video, vision_start and vision_end token ids must differ: {ids}"
            )
        return self

    @property
    def factor(self) -> int:
        """The side multiple of smart_resize."""
        return self.patch_size * self.merge_size


QWEN2_VL: dict[str, Any] = {}  # the defaults
QWEN2_5_VL: dict[str, Any] = {"generation": "qwen2_5_vl"}  # the image values are Qwen2-VL's
QWEN3_VL: dict[str, Any] = {
    "generation": "qwen3_vl",
    "patch_size": 16,
    "min_pixels": 65536,
    "max_pixels": 16777216,
    "image_mean": IMAGENET_STANDARD_MEAN,
    "image_std": IMAGENET_STANDARD_STD,
    "video_min_pixels": 128 * 32 * 32,
    "video_max_pixels": 768 * 32 * 32,
}
QWEN3_5: dict[str, Any] = {
    **QWEN3_VL,
    "image_token_id": 248056,
    "video_token_id": 248057,
    "vision_start_token_id": 248053,
    "vision_end_token_id": 248054,
}

# CLIP_MEAN / CLIP_STD: re-exported from sglang_mm_core.plugin, where they are defined.
__all__ = ["CLIP_MEAN", "CLIP_STD", "QWEN2_5_VL", "QWEN2_VL", "QWEN3_5", "QWEN3_VL", "QwenVLParams"]
