"""sglang-mm family plugin for Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 (``qwen_vl``)."""

from .family import QwenVLFamily
from .hf import spec_from_hf
from .params import QWEN2_5_VL, QWEN2_VL, QWEN3_5, QWEN3_VL, QwenVLParams
from .sizes import smart_resize

__all__ = [
    "QWEN2_5_VL",
    "QWEN2_VL",
    "QWEN3_5",
    "QWEN3_VL",
    "QwenVLFamily",
    "QwenVLParams",
    "smart_resize",
    "spec_from_hf",
]
