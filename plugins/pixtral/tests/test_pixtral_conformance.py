"""The core's plugin conformance suite: the family under Pixtral-12B's and Mistral 3's params,
both resamplers, and every shipped example spec."""

from __future__ import annotations

from pathlib import Path

from sglang_mm_pixtral import MISTRAL3, PixtralFamily

from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

MISTRAL3_ATEN = ConformanceTarget.from_family(PixtralFamily, {**MISTRAL3, "resample": "aten_u8"})
MISTRAL3_ATEN.id = "pixtral[mistral3,aten_u8]"
SPECS = sorted(p for d in ("pixtral*", "mistral3*") for p in EXAMPLES.glob(f"{d}/spec.json"))
TARGETS = [PixtralFamily, MISTRAL3_ATEN, *(ConformanceTarget.from_spec(p) for p in SPECS)]


def test_examples_are_shipped() -> None:
    assert [p.parent.name for p in SPECS] == ["mistral3", "pixtral"]


@parametrize_with_checks(TARGETS)
def test_conformance(target, check):
    check(target)
