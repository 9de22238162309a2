"""The Gemma 4 family (`gemma4`): the patch-budget resize, pre-patchified pixels with their
position ids, and the ``<boi>`` + ``<|image|>`` x tokens + ``<eoi>`` image sequence."""

from .family import Gemma4Family, aspect_ratio_preserving_size, mm_token_type_ids, position_ids
from .params import SUPPORTED_SOFT_TOKENS, Gemma4Params

__all__ = [
    "SUPPORTED_SOFT_TOKENS",
    "Gemma4Family",
    "Gemma4Params",
    "aspect_ratio_preserving_size",
    "mm_token_type_ids",
    "position_ids",
]
