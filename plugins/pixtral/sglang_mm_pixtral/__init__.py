"""sglang-mm family plugin for Pixtral-12B and Mistral 3 (``pixtral``)."""

from .family import PixtralFamily, content_mask, row_break_ids, target_size
from .params import MISTRAL3, PIXTRAL_12B, PixtralParams

__all__ = [
    "MISTRAL3",
    "PIXTRAL_12B",
    "PixtralFamily",
    "PixtralParams",
    "content_mask",
    "row_break_ids",
    "target_size",
]
