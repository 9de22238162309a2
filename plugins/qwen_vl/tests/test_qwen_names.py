"""Names: `QwenVLFamily` / `QwenVLParams` and the shared constants, and the retired names
(`QwenVL`, `Params`), which still resolve for one release with a `DeprecationWarning`."""

from __future__ import annotations

import importlib

import pytest
import sglang_mm_qwen_vl
from sglang_mm_qwen_vl import QWEN3_VL, QwenVLFamily, QwenVLParams
from transformers.image_utils import (
    IMAGENET_STANDARD_MEAN,
    IMAGENET_STANDARD_STD,
    OPENAI_CLIP_MEAN,
    OPENAI_CLIP_STD,
)

from sglang_mm_core import plugin


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("sglang_mm_qwen_vl", "QwenVL", QwenVLFamily),
        ("sglang_mm_qwen_vl", "Params", QwenVLParams),
        ("sglang_mm_qwen_vl.family", "QwenVL", QwenVLFamily),
        ("sglang_mm_qwen_vl.params", "Params", QwenVLParams),
    ],
)
def test_old_names_warn(module: str, old: str, new: type) -> None:
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is deprecated.*use "):
        assert getattr(mod, old) is new
    with pytest.raises(AttributeError):
        getattr(mod, old + "_missing")


def test_the_family_names_its_params() -> None:
    assert QwenVLFamily.Params is QwenVLParams
    assert sglang_mm_qwen_vl.spec_from_hf.__module__ == "sglang_mm_qwen_vl.hf"


def test_constants_are_huggingfaces() -> None:
    assert list(plugin.CLIP_MEAN) == list(OPENAI_CLIP_MEAN)
    assert list(plugin.CLIP_STD) == list(OPENAI_CLIP_STD)
    assert list(plugin.IMAGENET_STANDARD_MEAN) == list(IMAGENET_STANDARD_MEAN)
    assert list(plugin.IMAGENET_STANDARD_STD) == list(IMAGENET_STANDARD_STD)
    assert QwenVLParams().image_mean == plugin.CLIP_MEAN
    assert QwenVLParams(**QWEN3_VL).image_std == plugin.IMAGENET_STANDARD_STD
