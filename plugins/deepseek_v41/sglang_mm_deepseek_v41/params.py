"""The `deepseek_v41` spec params, named as a DeepSeek-V4.1 ``config.json`` names them in its
``vision_config`` (SGLang's flat config prefixes them: ``vision_patch_size``, ...,
``vision_max_n_token`` for ``max_image_tokens``); the defaults are SGLang's."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sglang_mm_core.plugin import FamilyParams

#: The smallest token budget every image fits: the very-tall collapse of the reference gives
#: ``(budget - 2) // 2`` rows of one token plus a newline each, and nothing below 4.
MIN_IMAGE_TOKENS = 4


#: A ratio as the config states it: an int stays an int (the reference's arithmetic with it
#: stays integral until a division), a float must be finite.
Ratio = (
    Annotated[int, Field(gt=0, le=1 << 20)]
    | Annotated[float, Field(gt=0, le=1 << 20, allow_inf_nan=False)]
)


class DeepseekV41Params(FamilyParams):
    """Spec ``params`` of the ``deepseek_v41`` family (docs/families/deepseek_v41.md)."""

    image_token_id: int = Field(
        129264, ge=0, description="The image placeholder; every position of an image carries it."
    )
    patch_size: int = Field(14, ge=1, le=1024, description="ViT patch side in pixels.")
    downsample_ratio: int = Field(
        3, ge=1, le=64, description="Side of the aligner's downsample (3: 3x3 patches a token)."
    )
    max_image_tokens: int = Field(
        1024,
        ge=MIN_IMAGE_TOKENS,
        le=1 << 20,
        description="Most LLM positions an image takes, start, newlines and end included.",
    )
    min_pixels: int = Field(
        295936, ge=0, le=1 << 40, description="Images with fewer pixels are planned upscaled."
    )
    max_wh_ratio: Ratio | None = Field(
        None, description="Widest aspect ratio kept; a wider image is stretched, not letterboxed."
    )
    pil_pass_order: Literal["pillow13", "pillow12"] = Field(
        "pillow13", description="Pass order of the bicubic resize (Pillow >= 13, or older)."
    )
