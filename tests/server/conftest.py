"""Fixtures of the server tests: the family under test (the toy family of tests/toy, in a
private `Registry`: core tests never depend on the plugins installed in the environment; the
Qwen-backed server tests live in plugins/qwen_vl/tests), its in-process reference pipeline,
test images, and real servers on 127.0.0.1 (random ports), always shut down after use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sglang_mm_toy import ToyFamily  # tests/conftest.py puts tests/toy on sys.path
from srv_helpers import FamilySetup, make_image

from sglang_mm_core import Registry, pipeline_from_spec
from sglang_mm_core.server import MmServer

PROXY_ENV = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]


@pytest.fixture(scope="session")
def fam() -> Iterator[FamilySetup]:
    doc = {"family": "toy"}
    registry = Registry()
    registry.register_family(ToyFamily)
    pipe = pipeline_from_spec(doc, registry=registry)
    yield FamilySetup(doc, registry, pipe)
    pipe.close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test client talks to 127.0.0.1 directly, never through a proxy from the env."""
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")


@pytest.fixture(scope="session")
def images() -> dict[str, bytes]:
    """A small corpus of mixed sizes and formats."""
    return {
        "jpeg_64x48": make_image(64, 48, "JPEG", 1),
        "jpeg_120x90": make_image(120, 90, "JPEG", 2),
        "png_56x56": make_image(56, 56, "PNG", 3),
        "webp_100x60": make_image(100, 60, "WEBP", 4),
        "jpeg_200x150": make_image(200, 150, "JPEG", 5),
    }


Launcher = Callable[..., MmServer]


@pytest.fixture
def launch(fam: FamilySetup) -> Iterator[Launcher]:
    """Start embedded servers for one test (spec overrides and launch options as keywords);
    every one is shut down afterwards."""
    started: list[MmServer] = []

    def start(spec: dict[str, Any] | None = None, **kw: Any) -> MmServer:
        kw.setdefault("registry", fam.registry)
        srv = MmServer.launch(spec if spec is not None else fam.doc, "127.0.0.1:0", **kw)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.shutdown(timeout_s=5)


@pytest.fixture(scope="module")
def server(fam: FamilySetup) -> Iterator[MmServer]:
    """One embedded server with the default settings, shared by a module."""
    srv = MmServer.launch(fam.doc, "127.0.0.1:0", registry=fam.registry)
    yield srv
    srv.shutdown(timeout_s=5)
