"""Shared fixtures of the core tests. The toy family package (tests/toy) is importable here
(see core_helpers); its dist-info (tests/toy/site) is NOT put on sys.path in this process, so
the installed-plugin discovery stays as installed, and the discovery tests run subprocesses."""

from __future__ import annotations

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
