"""The Gemma 3 family (`gemma3`): 896x896 bilinear pixels, optional pan-and-scan crops, and the
``\\n\\n<start_of_image>`` + soft tokens + ``<end_of_image>\\n\\n`` image sequence."""

from .family import Gemma3Family, pan_and_scan_rects, token_type_ids
from .params import Gemma3Params

__all__ = ["Gemma3Family", "Gemma3Params", "pan_and_scan_rects", "token_type_ids"]
