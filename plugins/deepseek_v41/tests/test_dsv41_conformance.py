"""The core's plugin conformance suite, on the default spec, the example spec and with a
``max_wh_ratio`` (the stretch branch)."""

from __future__ import annotations

import json
from pathlib import Path

from sglang_mm_deepseek_v41 import DeepseekV41Family

from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "deepseek_v41" / "spec.json"
SPEC = ConformanceTarget.from_family(DeepseekV41Family, json.loads(EXAMPLE.read_text())["params"])
SPEC.id = "deepseek_v41[example]"
STRETCH = ConformanceTarget.from_family(DeepseekV41Family, {"max_wh_ratio": 2})
STRETCH.id = "deepseek_v41[max_wh_ratio=2]"


@parametrize_with_checks([DeepseekV41Family, SPEC, STRETCH])
def test_conformance(target, check):  # type: ignore[no-untyped-def]
    check(target)
