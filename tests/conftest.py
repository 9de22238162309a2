"""Shared fixtures of the core tests. The toy family package (tests/toy) is importable here
(see core_helpers); its dist-info (tests/toy/site) is NOT put on sys.path in this process, so
the installed-plugin discovery stays as installed, and the discovery tests run subprocesses."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import core_helpers  # noqa: F401  (puts tests/toy on sys.path)
import pytest
from sglang_mm_toy import ToyFamily, ToyMRopeFamily

from sglang_mm_core import Registry


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    reg.register_family(ToyFamily, ToyMRopeFamily)
    return reg


# The local HTTP test server (tests/http_server.py): fixtures http_server, make_http_server.
from http_server import http_server, http_server_session, make_http_server  # noqa: E402, F401


@pytest.fixture(scope="session")
def broken_plugins_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder (for PYTHONPATH) where the broken plugin distributions are pip-installed."""
    from core_helpers import install_broken_plugins

    return install_broken_plugins(tmp_path_factory.mktemp("broken_plugins"))


# `.torch()` of the compact carrier is tested only where torch is installed (not in CI): the
# file is left out of collection there, so it is neither run nor counted as a skip.
if importlib.util.find_spec("torch") is None:
    collect_ignore = ["test_compact_torch.py"]
