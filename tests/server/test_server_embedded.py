"""Embedded mode: submit, park, the columnar drain, exactly-once answers from the host."""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
import requests
from srv_helpers import FamilySetup, data_url, wait_for

from sglang_mm_core.errors import RidError
from sglang_mm_core.plugin import MRope
from sglang_mm_core.server import MmServer

SHAPES = [["jpeg_64x48"], [], ["png_56x56", "webp_100x60"], ["jpeg_120x90"], ["jpeg_200x150"]]


def submit_async(
    pool: ThreadPoolExecutor, srv: MmServer, doc: dict[str, Any]
) -> Future[requests.Response]:
    return pool.submit(requests.post, srv.url + "/v1/submit", data=json.dumps(doc), timeout=30)


def doc_for(
    fam: FamilySetup, images: dict[str, bytes], shape: list[str], rid: str
) -> dict[str, Any]:
    return {
        "rid": rid,
        "input_ids": fam.prompt(len(shape)),
        "images": [data_url(images[k]) for k in shape],
    }


def test_drain_is_columnar_and_zero_copy(
    fam: FamilySetup, images: dict[str, bytes], launch: Any
) -> None:
    srv = launch(workers=2)
    want = {
        f"r{k}": fam.pipeline.process(fam.request([images[n] for n in s]))
        for k, s in enumerate(SHAPES)
    }
    with ThreadPoolExecutor(8) as pool:
        futs = {
            f"r{k}": submit_async(pool, srv, doc_for(fam, images, s, f"r{k}"))
            for k, s in enumerate(SHAPES)
        }
        wait_for(lambda: srv.engine.parked_count() == len(SHAPES), what="all parked")
        assert srv.wait_ingress(0)
        first = srv.drain(3)
        rest = srv.drain(100)
        assert len(first) == 3 and len(rest) == len(SHAPES) - 3
        assert len(srv.drain(10)) == 0
        for batch in (first, rest):
            # One contiguous int64 buffer; request i's ids at starts[i] for lengths[i].
            assert batch.data.dtype == np.int64 and batch.data.flags.c_contiguous
            assert int(batch.lengths.sum()) == len(batch.data)
            # Parked back to back in one arena chunk: the batch views it, no concatenation.
            assert not batch.data.flags.owndata
            for i, h in enumerate(batch.headers):
                w = want[h["rid"]]
                assert set(h) == {"rid", "n_items", "offsets", "hashes", "mrope_delta"}
                np.testing.assert_array_equal(batch.ids(i), w.input_ids)
                assert h["n_items"] == len(w.items)
                assert h["offsets"] == w.offsets
                assert h["hashes"] == w.hashes
                if isinstance(w.positions, MRope):
                    assert h["mrope_delta"] == w.positions.delta
                    np.testing.assert_array_equal(batch.positions[i], w.positions.positions)
                for g, e in zip(batch.items[i], w.items, strict=True):
                    np.testing.assert_array_equal(g.feature.array, e.feature.array)
        # Answer: results for some, errors for others; each client gets exactly that.
        for batch in (first, rest):
            for i, rid in enumerate(batch.rids):
                if rid == "r1":
                    assert srv.push_error(rid, 429, "too busy for text")
                else:
                    assert srv.push_result(
                        rid, f"ok {rid} {batch.lengths[i]}".encode(), "text/plain"
                    )
        for rid, fut in futs.items():
            resp = fut.result()
            if rid == "r1":
                assert resp.status_code == 429
                assert resp.json()["error"] == {
                    "type": "HostError",
                    "message": "too busy for text",
                    "item": None,
                    "modality": None,
                }
            else:
                assert resp.status_code == 200
                assert resp.headers["content-type"].startswith("text/plain")
                assert resp.text == f"ok {rid} {len(want[rid].input_ids)}"


def test_exactly_once(fam: FamilySetup, images: dict[str, bytes], launch: Any) -> None:
    srv = launch(workers=1)
    with ThreadPoolExecutor(2) as pool:
        fut = submit_async(pool, srv, doc_for(fam, images, ["jpeg_64x48"], "only"))
        with pytest.raises(RidError, match="unknown rid 'nobody'"):
            srv.push_result("nobody", b"x")
        assert srv.wait_ingress(10_000)
        batch = srv.drain(5)
        assert batch.rids == ["only"]
        with pytest.raises(ValueError, match="400-599"):
            srv.push_error("only", 200, "not an error status")
        with pytest.raises(ValueError, match="printable ASCII"):
            srv.push_result("only", b"x", "text/plain\r\nX-Injected: 1")
        assert srv.push_result("only", b"first", "text/plain")
        with pytest.raises(RidError, match="already answered"):
            srv.push_result("only", b"second", "text/plain")
        with pytest.raises(RidError, match="already answered"):
            srv.push_error("only", 500, "late")
        assert fut.result().text == "first"


def test_failed_requests_never_reach_the_host(
    fam: FamilySetup, images: dict[str, bytes], launch: Any
) -> None:
    srv = launch()
    bad = {"rid": "bad", "input_ids": fam.prompt(2), "images": [data_url(images["png_56x56"])]}
    resp = requests.post(srv.url + "/v1/submit", data=json.dumps(bad), timeout=30)
    assert resp.status_code == 400 and resp.json()["error"]["type"] == "LayoutError"
    assert not srv.wait_ingress(50)
    assert len(srv.drain(10)) == 0
    with pytest.raises(RidError):
        srv.push_result("bad", b"x")


def test_server_assigns_rids_and_refuses_duplicates(
    fam: FamilySetup, images: dict[str, bytes], launch: Any
) -> None:
    srv = launch()
    with ThreadPoolExecutor(4) as pool:
        anon = submit_async(pool, srv, {"input_ids": fam.prompt(0)})
        dup1 = submit_async(pool, srv, {"rid": "dup", "input_ids": fam.prompt(0)})
        wait_for(lambda: srv.engine.parked_count() == 2, what="two parked")
        dup2 = requests.post(
            srv.url + "/v1/submit", data=json.dumps({"rid": "dup", "input_ids": [1]}), timeout=30
        )
        assert dup2.status_code == 409 and dup2.json()["error"]["type"] == "DuplicateRid"
        batch = srv.drain(10)
        rids = batch.rids
        assert "dup" in rids and len(rids) == 2
        assigned = next(r for r in rids if r != "dup")
        assert len(assigned) == 32
        for rid in rids:
            srv.push_result(rid, rid.encode(), "text/plain")
        assert anon.result().text == assigned
        assert dup1.result().text == "dup"


def test_wait_ingress_times_out_and_drain_never_blocks(launch: Any) -> None:
    srv = launch()
    assert srv.wait_ingress(30) is False
    assert len(srv.drain(0)) == 0 and len(srv.drain(64)) == 0
    with pytest.raises(ValueError):
        srv.drain(-1)


def test_batch_output_equals_in_process(
    fam: FamilySetup, images: dict[str, bytes], launch: Any
) -> None:
    from srv_helpers import assert_same_output

    srv = launch()
    with ThreadPoolExecutor(2) as pool:
        fut = submit_async(pool, srv, doc_for(fam, images, ["jpeg_120x90", "png_56x56"], "x"))
        assert srv.wait_ingress(10_000)
        batch = srv.drain(1)
        want = fam.pipeline.process(
            fam.request([images["jpeg_120x90"], images["png_56x56"]], rid="x")
        )
        assert_same_output(batch.output(0), want)
        srv.push_result("x", b"done")
        assert fut.result().content == b"done"


def test_wait_ingress_releases_the_gil(launch: Any) -> None:
    import threading

    srv = launch()
    spins = [0]
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            spins[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        assert srv.wait_ingress(200) is False
        during = spins[0]
    finally:
        stop.set()
        t.join()
    assert during > 10_000  # the other thread ran freely while the host waited


def test_compact_parking_needs_a_family_that_offers_it(launch: Any) -> None:
    """The toy family has no compact form: asking to park it is refused at launch, naming the
    family, before anything is bound; a non-bool is refused too."""
    from sglang_mm_core.errors import LaunchError

    with pytest.raises(LaunchError, match="family 'toy' does not offer the compact form"):
        launch(compact=True)
    with pytest.raises(LaunchError, match="compact must be True or False"):
        launch(compact="yes")
