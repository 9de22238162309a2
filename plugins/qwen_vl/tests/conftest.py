"""The qwen_vl tests' shared fixtures."""

from __future__ import annotations

import pytest

PROXY_ENV = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The servers these tests start are on 127.0.0.1: no proxy of the environment may sit
    between (requests and urllib read these variables)."""
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
