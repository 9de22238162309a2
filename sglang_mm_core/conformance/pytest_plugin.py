"""pytest plugin (entry point ``pytest11``): runs the conformance checks on installed families
for any test that asks for the ``sglang_mm_target`` and ``sglang_mm_check`` arguments:

    def test_conformance(sglang_mm_target, sglang_mm_check):
        sglang_mm_check(sglang_mm_target)

``--sglang-mm-family NAME`` (repeatable) narrows it to those families. A test suite that asks
for neither argument is untouched, and nothing heavy is imported until one does."""

from __future__ import annotations

from typing import Any

ARGNAMES = ("sglang_mm_target", "sglang_mm_check")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("sglang-mm", "sglang-mm plugin conformance")
    group.addoption(
        "--sglang-mm-family",
        action="append",
        default=[],
        metavar="NAME",
        help="run the sglang-mm conformance checks on this installed family only (repeatable)",
    )


def pytest_generate_tests(metafunc: Any) -> None:
    if not all(name in metafunc.fixturenames for name in ARGNAMES):
        return
    from . import installed_targets, iter_checks

    families = metafunc.config.getoption("sglang_mm_family") or None
    pairs = iter_checks(installed_targets(families))
    metafunc.parametrize(ARGNAMES, pairs, ids=[f"{t.id}-{c.__name__}" for t, c in pairs])
