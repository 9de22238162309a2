"""sglang-mm family plugin for DeepSeek-V4.1 (``deepseek_v41``): SGLang's image preprocessing
(``deepseek_v41_image_processing.patchify_image``) bit for bit, and its compiled extension's
``dsv41.resize_patchify``."""

from .api import resize_patchify
from .family import GREY, DeepseekV41Family
from .grid import (
    IMAGE,
    IMAGE_END,
    IMAGE_NEW_LINE,
    IMAGE_START,
    Grid,
    num_image_tokens,
    plan_grid,
    token_grid,
    token_types,
)
from .hf import spec_from_hf
from .params import DeepseekV41Params

__all__ = [
    "GREY",
    "IMAGE",
    "IMAGE_END",
    "IMAGE_NEW_LINE",
    "IMAGE_START",
    "DeepseekV41Family",
    "DeepseekV41Params",
    "Grid",
    "num_image_tokens",
    "plan_grid",
    "resize_patchify",
    "spec_from_hf",
    "token_grid",
    "token_types",
]
