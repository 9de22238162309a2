"""Names: `QwenVLFamily` / `QwenVLParams` (the retired `QwenVL` / `Params` are gone, with no
alias) and the shared constants."""

from __future__ import annotations

import sglang_mm_qwen_vl
from sglang_mm_qwen_vl import QWEN3_VL, QwenVLFamily, QwenVLParams
from transformers.image_utils import (
    IMAGENET_STANDARD_MEAN,
    IMAGENET_STANDARD_STD,
    OPENAI_CLIP_MEAN,
    OPENAI_CLIP_STD,
)

from sglang_mm_core import plugin


def test_the_family_names_its_params() -> None:
    assert QwenVLFamily.Params is QwenVLParams
    assert sglang_mm_qwen_vl.spec_from_hf.__module__ == "sglang_mm_qwen_vl.hf"
    for module in (sglang_mm_qwen_vl, sglang_mm_qwen_vl.family, sglang_mm_qwen_vl.params):
        for old in ("QwenVL", "Params", "spec_from_hf_configs"):
            assert not hasattr(module, old), (module.__name__, old)


def test_constants_are_huggingfaces() -> None:
    assert list(plugin.CLIP_MEAN) == list(OPENAI_CLIP_MEAN)
    assert list(plugin.CLIP_STD) == list(OPENAI_CLIP_STD)
    assert list(plugin.IMAGENET_STANDARD_MEAN) == list(IMAGENET_STANDARD_MEAN)
    assert list(plugin.IMAGENET_STANDARD_STD) == list(IMAGENET_STANDARD_STD)
    assert QwenVLParams().image_mean == plugin.CLIP_MEAN
    assert QwenVLParams(**QWEN3_VL).image_std == plugin.IMAGENET_STANDARD_STD
