"""The core's plugin conformance suite, for this family under Qwen2-VL's and Qwen3.5's params
and both resamplers."""

from __future__ import annotations

from sglang_mm_qwen_vl import QWEN3_5, QwenVLFamily

from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

QWEN3_5_PIL = ConformanceTarget.from_family(QwenVLFamily, {**QWEN3_5, "resample": "pil"})
QWEN3_5_PIL.id = "qwen_vl[qwen3_5,pil]"
TARGETS = [QwenVLFamily, QWEN3_5_PIL]


@parametrize_with_checks(TARGETS)
def test_conformance(target, check):
    check(target)
