"""The core's plugin conformance suite: the family under the PIL backend, and every shipped
example spec (GLM-4.1V, GLM-4.5V, GLM-4.6V; torchvision backend)."""

from __future__ import annotations

from pathlib import Path

from sglang_mm_glm4v import Glm4vFamily

from sglang_mm_core.conformance import ConformanceTarget, parametrize_with_checks

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

PIL = ConformanceTarget.from_family(Glm4vFamily, {"resample": "pil"})
PIL.id = "glm4v[pil]"
SPECS = sorted(EXAMPLES.glob("glm4*/spec.json"))
TARGETS = [PIL, *(ConformanceTarget.from_spec(p) for p in SPECS)]


def test_examples_are_shipped() -> None:
    assert [p.parent.name for p in SPECS] == ["glm46v", "glm4v", "glm4v_moe"]


@parametrize_with_checks(TARGETS)
def test_conformance(target, check):  # type: ignore[no-untyped-def]
    check(target)
