"""The test module `sglang-mm conformance` hands to pytest: every check on every installed family,
or on those named in ``$SGLANG_MM_CONFORMANCE_FAMILIES`` (comma-separated)."""

from __future__ import annotations

import os

from . import ConformanceTarget, installed_targets, parametrize_with_checks
from .checks import Check

FAMILIES_ENV = "SGLANG_MM_CONFORMANCE_FAMILIES"


@parametrize_with_checks(installed_targets(os.environ.get(FAMILIES_ENV) or None))
def test_conformance(target: ConformanceTarget, check: Check) -> None:
    check(target)
