"""The server with the Qwen-VL family (moved here from the core's server tests, which use their
own toy family): real servers on 127.0.0.1 whose answers, in both body formats, equal the
in-process pipeline bit for bit (float32 patches, ``image_grid_thw``, MRoPE), token counts
equal ``count_tokens``, the output files of the CLI's layout read back the same, and a kernel
limit reaches the client with its structured fields."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sglang_mm_core import LimitError, MmInput, MmOutput, Pipeline, load_output, pipeline_from_spec
from sglang_mm_core.client import Client
from sglang_mm_core.plugin import MRope
from sglang_mm_core.server import MmServer

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
SPEC = json.loads((EXAMPLES / "qwen2_vl" / "spec.json").read_text())
IMAGES = {
    "rocket.jpg": EXAMPLES / "qwen2_vl" / "rocket.jpg",
    "coffee.jpg": EXAMPLES / "qwen2_vl" / "coffee.jpg",
    "chelsea.png": EXAMPLES / "images" / "chelsea.png",
    "coffee.webp": EXAMPLES / "images" / "coffee.webp",
}
REQUESTS = {
    "text only": [],
    "one jpeg": ["rocket.jpg"],
    "png and webp": ["chelsea.png", "coffee.webp"],
    "three, one twice": ["coffee.jpg", "rocket.jpg", "coffee.jpg"],
}


@pytest.fixture(autouse=True)
def _no_proxy(no_proxy: None) -> None:
    """Every test here talks to a server on 127.0.0.1."""


@pytest.fixture(scope="module")
def pipe() -> Iterator[Pipeline]:
    with pipeline_from_spec(SPEC) as p:
        yield p


@pytest.fixture(scope="module")
def server() -> Iterator[MmServer]:
    srv = MmServer.launch(SPEC, "127.0.0.1:0", workers=2)
    yield srv
    srv.shutdown(timeout_s=10)


@pytest.fixture(scope="module")
def images() -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in IMAGES.items()}


def _request(pipe: Pipeline, images: dict[str, bytes], names: list[str], rid: str | None) -> Any:
    ids = list(pipe.family.example_prompt(len(names)))
    return MmInput(input_ids=ids, images=[images[n] for n in names], rid=rid)


def assert_same_output(got: MmOutput, want: MmOutput) -> None:
    assert (got.family, got.spec_fingerprint, got.rid) == (
        want.family,
        want.spec_fingerprint,
        want.rid,
    )
    np.testing.assert_array_equal(got.input_ids, want.input_ids)
    assert got.input_ids.dtype == np.int64
    assert [tuple(o) for o in got.offsets] == [tuple(o) for o in want.offsets]
    assert isinstance(want.positions, MRope) and isinstance(got.positions, MRope)
    assert got.positions.delta == want.positions.delta
    np.testing.assert_array_equal(got.positions.positions, want.positions.positions)
    assert len(got.items) == len(want.items)
    for g, w in zip(got.items, want.items, strict=True):
        assert (g.hash, g.tokens, g.geometry) == (w.hash, w.tokens, w.geometry)
        assert g.feature.dtype == w.feature.dtype == "float32"
        np.testing.assert_array_equal(g.feature.array, w.feature.array)
        assert sorted(g.aux) == sorted(w.aux) == ["image_grid_thw"]
        for k in w.aux:
            assert g.aux[k].dtype == w.aux[k].dtype
            np.testing.assert_array_equal(g.aux[k].array, w.aux[k].array)


def _expanded(out: MmOutput) -> MmOutput:
    """``out`` with every compact feature expanded (what a full answer carries)."""
    items = [
        type(it)(it.feature.expand(), it.aux, it.hash, it.geometry, it.tokens) for it in out.items
    ]
    return MmOutput(
        out.input_ids, items, out.offsets, out.positions, out.family, out.spec_fingerprint, out.rid
    )


@pytest.mark.parametrize("fmt", ["safetensors", "json"])
@pytest.mark.parametrize("name", list(REQUESTS))
def test_server_answer_equals_in_process(
    pipe: Pipeline, server: MmServer, images: dict[str, bytes], name: str, fmt: Any
) -> None:
    req = _request(pipe, images, REQUESTS[name], rid=f"rid-{name}")
    with Client(server.url) as c:
        got = c.preprocess(req, fmt=fmt)
    assert_same_output(got, pipe.process(req))


def test_tokens_equal_count_tokens(
    pipe: Pipeline, server: MmServer, images: dict[str, bytes]
) -> None:
    with Client(server.url) as c:
        for names in REQUESTS.values():
            req = _request(pipe, images, names, rid=None)
            assert c.tokens(req) == pipe.count_tokens(req)


@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_output_files_read_back(
    pipe: Pipeline, images: dict[str, bytes], tmp_path: Path, suffix: str
) -> None:
    from sglang_mm_core import save_output

    want = pipe.process(_request(pipe, images, ["chelsea.png", "rocket.jpg"], rid="f"))
    path = tmp_path / f"out{suffix}"
    save_output(want, path)
    assert_same_output(load_output(path), want)
    assert_same_output(load_output(path.read_bytes()), want)


def test_kernel_limit_reaches_the_client_with_its_fields(
    pipe: Pipeline, images: dict[str, bytes]
) -> None:
    spec = {**SPEC, "limits": {"max_items": 16, "max_image_pixels": 10_000}}
    srv = MmServer.launch(spec, "127.0.0.1:0", workers=1)
    try:
        req = _request(pipe, images, ["chelsea.png", "rocket.jpg"], rid=None)
        with Client(srv.url) as c, pytest.raises(LimitError) as info:
            c.preprocess(req)
    finally:
        srv.shutdown(timeout_s=10)
    from PIL import Image

    w, h = Image.open(io.BytesIO(images["chelsea.png"])).size
    err = info.value
    assert err.item == 0 and err.status == 413
    assert (err.limit, err.limit_value, err.value) == ("max_image_pixels", 10_000, w * h)
    assert str(err) == (
        f"image 0 (data_url): PNG image of {w}x{h} = {w * h} pixels exceeds the limit of "
        "10000 pixels"
    )


def test_compact_answers_expand_to_the_full_ones(
    pipe: Pipeline, server: MmServer, images: dict[str, bytes]
) -> None:
    """``?compact=1`` (the client's ``compact=True``) and its ``Accept`` form answer compact
    features that expand to the in-process full ones bit for bit; the default stays full."""
    import http.client

    from sglang_mm_core import CompactTensor
    from sglang_mm_core.client import request_body
    from sglang_mm_core.server import COMPACT_MEDIA_TYPE

    req = _request(pipe, images, ["coffee.jpg", "chelsea.png"], rid="compact")
    want = pipe.process(req)
    with Client(server.url) as c:
        got = c.preprocess(req, compact=True)
        full = c.preprocess(req)
    assert all(isinstance(it.feature, CompactTensor) for it in got.items)
    assert all(not isinstance(it.feature, CompactTensor) for it in full.items)
    assert_same_output(full, want)
    assert_same_output(_expanded(got), want)
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request(
        "POST",
        "/v1/preprocess",
        request_body(req),
        {"Content-Type": "application/json", "Accept": COMPACT_MEDIA_TYPE},
    )
    resp = conn.getresponse()
    assert resp.status == 200
    by_accept = load_output(resp.read())
    conn.close()
    assert all(isinstance(it.feature, CompactTensor) for it in by_accept.items)
    assert all(a.feature == b.feature for a, b in zip(by_accept.items, got.items, strict=True))


def test_embedded_parks_compact_features_when_the_host_asks(
    pipe: Pipeline, images: dict[str, bytes]
) -> None:
    """``MmServer.launch(..., compact=True)``: what ``/v1/submit`` parks carries compact
    features, and each expands to the in-process full feature bit for bit."""
    import base64
    from concurrent.futures import ThreadPoolExecutor

    import requests

    from sglang_mm_core import CompactTensor

    names = ["coffee.jpg", "chelsea.png"]
    want = pipe.process(_request(pipe, images, names, rid="c1"))
    doc = {
        "rid": "c1",
        "input_ids": list(pipe.family.example_prompt(len(names))),
        "images": [base64.b64encode(images[n]).decode() for n in names],
    }
    with MmServer.launch(SPEC, "127.0.0.1:0", workers=1, compact=True) as srv:
        with ThreadPoolExecutor(1) as pool:
            fut = pool.submit(
                requests.post, srv.url + "/v1/submit", data=json.dumps(doc), timeout=60
            )
            assert srv.wait_ingress(30_000)
            batch = srv.drain(8)
            assert batch.rids == ["c1"]
            got = batch.output(0)
            assert srv.push_result("c1", b"done", "text/plain")
            assert fut.result().content == b"done"
    assert all(isinstance(it.feature, CompactTensor) for it in got.items)
    assert sum(it.feature.nbytes for it in got.items) * 7 <= sum(
        it.feature.array.nbytes for it in want.items
    ) + 7 * 3072 * len(names)
    assert_same_output(_expanded(got), want)
