"""The core's plugin conformance suite, on the default spec and the smallest and largest token
budgets."""

from __future__ import annotations

from sglang_mm_gemma4 import Gemma4Family

from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

SMALL = ConformanceTarget.from_family(Gemma4Family, {"max_soft_tokens": 70})
SMALL.id = "gemma4[70]"
LARGE = ConformanceTarget.from_family(Gemma4Family, {"max_soft_tokens": 1120})
LARGE.id = "gemma4[1120]"


@parametrize_with_checks([Gemma4Family, SMALL, LARGE])
def test_conformance(target, check):  # type: ignore[no-untyped-def]
    check(target)
