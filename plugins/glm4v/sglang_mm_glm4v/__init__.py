"""sglang-mm family plugin for GLM-4.1V, GLM-4.5V and GLM-4.6V (``glm4v``)."""

from .family import Glm4vFamily, mm_token_type_ids
from .hf import spec_from_hf
from .params import GLM4V, GLM4V_MOE, GLM46V, Glm4vParams

__all__ = [
    "GLM4V",
    "GLM4V_MOE",
    "GLM46V",
    "Glm4vFamily",
    "Glm4vParams",
    "mm_token_type_ids",
    "spec_from_hf",
]
