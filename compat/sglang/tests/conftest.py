"""The `ext` fixture: SGLang's extension (compat_helpers.load_extension); and the core's local
HTTP test server fixtures (tests/http_server.py)."""

from __future__ import annotations

from types import ModuleType

import pytest
from compat_helpers import load_extension
from http_server import http_server, http_server_session, make_http_server  # noqa: F401


@pytest.fixture(scope="session")
def ext() -> ModuleType:
    return load_extension()
