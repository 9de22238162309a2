"""Repository-wide pytest hooks. In CI (``CI`` set, as `.ci/run` is run) a skipped test fails
the run: a skip there means coverage silently went missing (an uninstalled plugin, a missing
tool), which must not pass as green."""

from __future__ import annotations

import os

import pytest

_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and os.environ.get("CI"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _skipped and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _skipped:
        terminalreporter.write_line(
            f"CI: {len(_skipped)} skipped test(s) count as failures: " + ", ".join(_skipped[:10]),
            red=True,
        )


# The plugin templates are not installed in the development venv: they are folders to copy,
# built and tested out of the repository by tests/packaging/test_template.py.
collect_ignore = ["plugins/template_clip", "plugins/template_letterbox"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The packaging tests (fresh venvs, builds from sdists) first: they are the longest files,
    so under `pytest -n 2 --dist loadfile` they start at once and the rest fills in around
    them, instead of one running alone at the end."""
    items.sort(key=lambda item: 0 if "tests/packaging/" in item.nodeid else 1)
