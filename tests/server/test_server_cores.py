"""Core partitioning (the exact rule of docs/server.md), thread pinning, and launch refusing
settings it cannot honour."""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any

import pytest
from srv_helpers import FamilySetup

from sglang_mm_core.errors import LaunchError
from sglang_mm_core.server import MmServer, partition_cores, pin_current_thread
from sglang_mm_core.server import cores as cores_mod

HAS_AFFINITY = hasattr(os, "sched_getaffinity") and hasattr(os, "sched_setaffinity")


def _fake_affinity(monkeypatch: pytest.MonkeyPatch, allowed: set[int]) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(allowed), raising=False)
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cores: None, raising=False)


@pytest.mark.parametrize(
    ("n", "want"),
    [
        (1, (None, None)),
        (3, (None, None)),
        (4, ((0,), (1, 2, 3))),
        (8, ((0, 1), (2, 3, 4, 5, 6, 7))),
        (64, ((0, 1), tuple(range(2, 64)))),
    ],
)
def test_partition_cores_faked(monkeypatch: pytest.MonkeyPatch, n: int, want: Any) -> None:
    _fake_affinity(monkeypatch, set(range(n)))
    assert partition_cores() == want


def test_partition_takes_the_lowest_allowed_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_affinity(monkeypatch, {9, 3, 17, 5, 11, 40, 7, 8})
    assert partition_cores() == ((3, 5), (7, 8, 9, 11, 17, 40))
    assert partition_cores([6, 2, 4, 0]) == ((0,), (2, 4, 6))


def test_partition_without_affinity_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    assert partition_cores() == (None, None)
    assert partition_cores(range(64)) == (None, None)


@pytest.mark.skipif(not HAS_AFFINITY, reason="no affinity API on this platform")
def test_partition_cores_for_real() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    n = len(allowed)
    launch, server = partition_cores()
    if n < 4:
        assert (launch, server) == (None, None)
    else:
        reserve = min(2, n // 4)
        assert launch == tuple(allowed[:reserve])
        assert server == tuple(allowed[reserve:])


def _in_thread(fn: Any) -> Any:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


@pytest.mark.skipif(not HAS_AFFINITY, reason="no affinity API on this platform")
def test_pin_current_thread_for_real() -> None:
    core = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)

    def pin() -> tuple[bool, set[int]]:
        return pin_current_thread([core], "test"), os.sched_getaffinity(0)

    ok, seen = _in_thread(pin)
    assert ok and seen == {core}
    assert os.sched_getaffinity(0) == before  # only that thread was pinned


@pytest.mark.skipif(not HAS_AFFINITY, reason="no affinity API on this platform")
def test_pin_failure_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sglang_mm.server"):
        ok = _in_thread(lambda: pin_current_thread([100_000], "test thread"))
    assert ok is False
    assert "cannot pin test thread" in caplog.text


def test_launch_refuses_cores_without_affinity_api(
    monkeypatch: pytest.MonkeyPatch, fam: FamilySetup
) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    assert not cores_mod.affinity_available()
    with pytest.raises(LaunchError, match=r"cores: .*no CPU affinity API"):
        MmServer.launch(fam.doc, "127.0.0.1:0", cores=((0,), (1,)), registry=fam.registry)


@pytest.mark.skipif(not HAS_AFFINITY, reason="no affinity API on this platform")
def test_launch_refuses_cores_not_allowed(fam: FamilySetup) -> None:
    with pytest.raises(LaunchError, match=r"cores: server cores \[100000\] are not allowed"):
        MmServer.launch(fam.doc, "127.0.0.1:0", cores=(None, [100_000]), registry=fam.registry)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"workers": 0}, "workers must be an integer >= 1"),
        ({"queue_size": 0}, "queue_size must be an integer >= 1"),
        ({"ring_size": -1}, "ring_size must be an integer >= 1"),
        ({"deadline_s": 0}, "deadline_s must be > 0"),
        ({"cores": "all"}, "cores must be None, 'auto' or a pair"),
        ({"cores": (1, 2, 3)}, r"cores must be \(launch_cores, server_cores\)"),
    ],
)
def test_launch_refuses_bad_settings(fam: FamilySetup, kw: dict[str, Any], match: str) -> None:
    with pytest.raises(LaunchError, match=match):
        MmServer.launch(fam.doc, "127.0.0.1:0", registry=fam.registry, **kw)


def test_launch_refuses_a_port_in_use(fam: FamilySetup) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        with pytest.raises(LaunchError, match=f"http_addr 127.0.0.1:{port}: .*already in use"):
            MmServer.launch(fam.doc, f"127.0.0.1:{port}", registry=fam.registry)
    finally:
        busy.close()


@pytest.mark.parametrize("addr", ["127.0.0.1", "127.0.0.1:http", ":80", "127.0.0.1:70000"])
def test_launch_refuses_a_bad_address(fam: FamilySetup, addr: str) -> None:
    with pytest.raises(LaunchError, match="http_addr"):
        MmServer.launch(fam.doc, addr, registry=fam.registry)


@pytest.mark.skipif(not HAS_AFFINITY, reason="no affinity API on this platform")
def test_launch_pins_workers_then_narrows_the_host_thread(fam: FamilySetup) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two allowed cores to split")
    launch_cores, server_cores = (allowed[0],), tuple(allowed[1:])
    box: dict[str, Any] = {}

    def host() -> None:
        srv = MmServer.launch(
            fam.doc,
            "127.0.0.1:0",
            cores=(launch_cores, server_cores),
            workers=2,
            registry=fam.registry,
        )
        box["srv"] = srv
        box["host"] = os.sched_getaffinity(0)
        box["workers"] = [os.sched_getaffinity(t.native_id) for t in srv.engine._workers]

    t = threading.Thread(target=host)
    t.start()
    t.join()
    srv = box["srv"]
    try:
        assert box["host"] == set(launch_cores)
        assert box["workers"] == [set(server_cores)] * 2
        assert os.sched_getaffinity(0) == set(allowed)  # the test's own thread is untouched
    finally:
        srv.shutdown(5)
