"""The Gemma 4 family (`gemma4`): the patch-budget resize, pre-patchified pixels with their
position ids, the ``<boi>`` + ``<|image|>`` x tokens + ``<eoi>`` image sequence, and videos as
timestamped frames."""

from .family import Gemma4Family, mm_token_type_ids
from .geometry import aspect_ratio_preserving_size, position_ids
from .params import SUPPORTED_SOFT_TOKENS, Gemma4Params
from .video import sample_indices, timestamp_text

__all__ = [
    "SUPPORTED_SOFT_TOKENS",
    "Gemma4Family",
    "Gemma4Params",
    "aspect_ratio_preserving_size",
    "mm_token_type_ids",
    "position_ids",
    "sample_indices",
    "timestamp_text",
]
