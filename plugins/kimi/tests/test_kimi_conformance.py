"""The core's plugin conformance suite, on both references and a small patch budget."""

from __future__ import annotations

from sglang_mm_kimi import KimiFamily

from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

ATEN = ConformanceTarget.from_family(KimiFamily, {"resample": "aten_u8"})
SMALL = ConformanceTarget.from_family(KimiFamily, {"max_patches": 256})


@parametrize_with_checks([KimiFamily, ATEN, SMALL])
def test_conformance(target, check):  # type: ignore[no-untyped-def]
    check(target)
