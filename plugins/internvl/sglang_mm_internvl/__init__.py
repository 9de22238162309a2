"""sglang-mm family plugin for InternVL 3 and 3.5 (``internvl``)."""

from .family import InternVLFamily
from .hf import spec_from_hf
from .params import INTERNVL3, INTERNVL3_5, InternVLParams
from .tiling import Tiling

__all__ = ["INTERNVL3", "INTERNVL3_5", "InternVLFamily", "InternVLParams", "Tiling", "spec_from_hf"]
