"""sglang-mm family plugin for Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 (``qwen_vl``)."""

from typing import TYPE_CHECKING

from sglang_mm_core.plugin import deprecated_aliases

from .family import QwenVLFamily
from .hf import spec_from_hf
from .params import QWEN2_5_VL, QWEN2_VL, QWEN3_5, QWEN3_VL, QwenVLParams
from .sizes import smart_resize

# The names before the family and params names were made consistent (one release).
if not TYPE_CHECKING:  # runtime only: type checkers report the old names as missing
    __getattr__ = deprecated_aliases(
        __name__,
        {
            "QwenVL": ("sglang_mm_qwen_vl.QwenVLFamily", QwenVLFamily),
            "Params": ("sglang_mm_qwen_vl.QwenVLParams", QwenVLParams),
        },
    )

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
