"""The core's plugin conformance suite: both references, a small patch budget (Kimi K2.5 and
Kimi K3), and every shipped example spec (through the installed plugin)."""

from __future__ import annotations

from pathlib import Path

from _kimi_refs import K3_TOKENIZER_JSON
from sglang_mm_kimi import KimiFamily

from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SPECS = sorted(EXAMPLES.glob("kimi*/spec.json"))
ATEN = ConformanceTarget.from_family(KimiFamily, {"resample": "aten_u8"})
SMALL = ConformanceTarget.from_family(KimiFamily, {"max_patches": 256})
K3_SMALL = ConformanceTarget.from_family(
    KimiFamily,
    {"generation": "k3", "max_patches": 256, "tokenizer": str(K3_TOKENIZER_JSON)},
)
TARGETS = [KimiFamily, ATEN, SMALL, K3_SMALL, *(ConformanceTarget.from_spec(p) for p in SPECS)]


def test_examples_are_shipped() -> None:
    assert [p.parent.name for p in SPECS] == ["kimi_k2_5", "kimi_k3"]


@parametrize_with_checks(TARGETS)
def test_conformance(target, check):  # type: ignore[no-untyped-def]
    check(target)
