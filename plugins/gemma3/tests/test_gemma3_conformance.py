"""The core's plugin conformance suite, on the default spec and with pan and scan."""

from __future__ import annotations

from sglang_mm_gemma3 import Gemma3Family

from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

PAS = ConformanceTarget.from_family(
    Gemma3Family,
    {"do_pan_and_scan": True, "pan_and_scan_prefix_ids": [9], "pan_and_scan_infix_ids": [10]},
)
PAS.id = "gemma3[pan_and_scan]"


@parametrize_with_checks([Gemma3Family, PAS])
def test_conformance(target, check):  # type: ignore[no-untyped-def]
    check(target)
