"""The standalone endpoints on a real server (127.0.0.1, random port) through real HTTP
clients: results equal the in-process pipeline bit for bit, every status code and error body of
the contract, the body cap, and the secure fetch defaults."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from srv_helpers import FamilySetup, assert_same_output, data_url

from sglang_mm_core import FetchError, LayoutError, LimitError, MmInput, Spec
from sglang_mm_core.client import Client
from sglang_mm_core.errors import ServerError
from sglang_mm_core.server import MmServer
from sglang_mm_core.server.config import server_spec


def post(srv: MmServer, path: str, body: Any, **kw: Any) -> requests.Response:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return requests.post(srv.url + path, data=data, timeout=30, **kw)


def assert_error(
    resp: requests.Response,
    status: int,
    kind: str,
    item: int | None = None,
    modality: str = "image",
) -> None:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    err = resp.json()["error"]
    assert set(err) - {"fields"} == {"type", "message", "item", "modality"}
    assert err["type"] == kind, err
    assert err["item"] == item, err
    assert err["modality"] == (None if item is None else modality), err
    assert err["message"]


@pytest.fixture(scope="module")
def client(server: MmServer) -> Iterator[Client]:
    with Client(server.url) as c:
        yield c


REQUESTS = {
    "text only": [],
    "one jpeg": ["jpeg_64x48"],
    "png and webp": ["png_56x56", "webp_100x60"],
    "three mixed": ["jpeg_200x150", "jpeg_120x90", "png_56x56"],
    "same image twice": ["jpeg_64x48", "jpeg_64x48"],
}


@pytest.mark.parametrize("fmt", ["safetensors", "json"])
@pytest.mark.parametrize("name", list(REQUESTS))
def test_preprocess_equals_in_process(
    fam: FamilySetup, images: dict[str, bytes], client: Client, name: str, fmt: Any
) -> None:
    req = fam.request([images[k] for k in REQUESTS[name]], rid=f"rid-{name}")
    want = fam.pipeline.process(req)
    got = client.preprocess(req, fmt=fmt)
    assert_same_output(got, want)


def test_rid_is_optional(fam: FamilySetup, images: dict[str, bytes], client: Client) -> None:
    req = fam.request([images["jpeg_64x48"]])
    got = client.preprocess(req)
    assert got.rid is None
    assert_same_output(got, fam.pipeline.process(req))


def test_answer_headers(fam: FamilySetup, images: dict[str, bytes], server: MmServer) -> None:
    body = {"input_ids": fam.prompt(1), "images": [data_url(images["png_56x56"])]}
    resp = post(server, "/v1/preprocess", body)
    assert resp.status_code == 200
    assert resp.headers["X-Format"] == "safetensors"
    assert resp.headers["content-type"] == "application/octet-stream"
    assert int(resp.headers["content-length"]) == len(resp.content)
    resp = post(server, "/v1/preprocess?format=json", body)
    assert resp.status_code == 200
    assert resp.headers["X-Format"] == "json"
    assert resp.json()["family"] == fam.pipeline.family.name


def test_tokens_equals_count_tokens(
    fam: FamilySetup, images: dict[str, bytes], client: Client
) -> None:
    for name in REQUESTS:
        req = fam.request([images[k] for k in REQUESTS[name]])
        assert client.tokens(req) == fam.pipeline.count_tokens(req)


def test_health_families_metrics_openapi(
    fam: FamilySetup, images: dict[str, bytes], server: MmServer, client: Client
) -> None:
    health = client.health()
    assert health["status"] == "ok"
    assert health["spec_fingerprint"] == fam.pipeline.spec_fingerprint
    fams = client.families()
    assert fams["serving"] == fam.pipeline.family.name
    assert fam.pipeline.family.name in [f["name"] for f in fams["installed"]]
    client.preprocess(fam.request([images["jpeg_64x48"], images["png_56x56"]]))
    with pytest.raises(LayoutError):
        client.preprocess(MmInput(input_ids=fam.prompt(2), images=[images["jpeg_64x48"]]))
    text = requests.get(server.url + "/metrics", timeout=10).text
    for name in (
        'sglang_mm_requests_total{endpoint="/v1/preprocess",status="200"}',
        'sglang_mm_requests_total{endpoint="/v1/preprocess",status="400"}',
        'sglang_mm_errors_total{type="LayoutError"}',
        "sglang_mm_request_seconds_bucket",
        "sglang_mm_queue_depth",
        "sglang_mm_images_processed_total",
    ):
        assert name in text, name
    images_done = [
        ln for ln in text.splitlines() if ln.startswith("sglang_mm_images_processed_total")
    ]
    assert float(images_done[0].split()[-1]) >= 2
    api = requests.get(server.url + "/openapi.json", timeout=10).json()
    assert {"/v1/preprocess", "/v1/tokens", "/v1/submit", "/v1/families", "/health"} <= set(
        api["paths"]
    )
    schema = api["paths"]["/v1/preprocess"]["post"]["requestBody"]["content"]["application/json"]
    assert set(schema["schema"]["properties"]) == {"rid", "input_ids", "images", "videos"}
    assert "$defs" not in json.dumps(schema)  # every schema inlined: no dangling reference
    # what the server refuses, the schema does not allow: an empty prompt (a 400, below)
    assert schema["schema"]["properties"]["input_ids"]["minItems"] == 1


@pytest.mark.parametrize(
    ("body", "query", "status", "kind"),
    [
        (b"{not json", "", 422, "ValidationError"),
        (b"", "", 422, "ValidationError"),
        ({"input_ids": "12"}, "", 422, "ValidationError"),
        ({"input_ids": [1], "extra": 1}, "", 422, "ValidationError"),
        ({"input_ids": [-1]}, "", 422, "ValidationError"),
        ({"input_ids": [2**63]}, "", 422, "ValidationError"),
        ({"images": []}, "", 422, "ValidationError"),
        ({"input_ids": [1], "images": [7]}, "", 422, "ValidationError"),
        ({"input_ids": [1]}, "?format=xml", 422, "ValidationError"),
        ({"input_ids": []}, "", 400, "MmRequestError"),
    ],
)
def test_malformed_requests(
    server: MmServer, body: Any, query: str, status: int, kind: str
) -> None:
    for path in ("/v1/preprocess", "/v1/tokens"):
        if query and path == "/v1/tokens":
            continue
        assert_error(post(server, path + query, body), status, kind)


@pytest.mark.parametrize(
    ("body", "escape"),
    [
        (b'{"input_ids": [1], "rid": "\\ud800"}', "\\ud800"),
        (b'{"input_ids": [1], "rid": "a\\ud83dz"}', "\\ud83d"),
        (b'{"input_ids": [1], "images": ["\\udc00"]}', "\\udc00"),
    ],
    ids=["high-alone", "high-then-text", "low-alone"],
)
def test_a_lone_surrogate_is_named(server: MmServer, body: bytes, escape: str) -> None:
    """The JSON parser calls it "unexpected end of hex escape"; the answer names the fault."""
    resp = post(server, "/v1/preprocess", body)
    assert_error(resp, 422, "ValidationError")
    message = resp.json()["error"]["message"]
    assert f"the escape {escape} at byte" in message and "lone UTF-16 surrogate" in message
    pair = post(server, "/v1/tokens", b'{"input_ids": [1], "rid": "\\ud83d\\ude00"}')
    assert pair.status_code == 200 and pair.json()["rid"] == "\U0001f600"


def test_bad_content_is_400_naming_the_item(
    fam: FamilySetup, images: dict[str, bytes], server: MmServer
) -> None:
    good = data_url(images["jpeg_64x48"])
    corrupt = data_url(b"\xff\xd8\xff\xe0 definitely not a jpeg" * 3)
    cases = [
        ([corrupt], 1, "DecodeError", 0),
        ([good, corrupt], 2, "DecodeError", 1),
        (["!!! not base64 !!!"], 1, "FetchError", 0),
        ([good], 2, "LayoutError", None),
    ]
    for imgs, placeholders, kind, item in cases:
        body = {"input_ids": fam.prompt(placeholders), "images": imgs}
        assert_error(post(server, "/v1/preprocess", body), 400, kind, item)


def test_over_a_limit_is_413(
    fam: FamilySetup, images: dict[str, bytes], server: MmServer, launch: Any
) -> None:
    max_items = fam.pipeline.spec.spec.limits.max_items
    tiny = data_url(images["png_56x56"])
    body = {"input_ids": fam.prompt(max_items + 1), "images": [tiny] * (max_items + 1)}
    assert_error(post(server, "/v1/preprocess", body), 413, "LimitError")
    small = launch(fam.spec(limits={"max_image_pixels": 1000}))
    body = {"input_ids": fam.prompt(1), "images": [data_url(images["jpeg_64x48"])]}
    assert_error(post(small, "/v1/preprocess", body), 413, "LimitError", 0)
    assert_error(post(small, "/v1/tokens", body), 413, "LimitError", 0)


def test_body_over_the_cap_is_413(fam: FamilySetup, images: dict[str, bytes], launch: Any) -> None:
    cap = 20_000
    srv = launch(fam.spec(limits={"max_body_bytes": cap}))
    big = {"input_ids": fam.prompt(0) + [1] * 10_000}
    raw = json.dumps(big).encode()
    assert len(raw) > cap
    # Declared by Content-Length: refused before the body is read.
    assert_error(post(srv, "/v1/preprocess", raw), 413, "LimitError")
    # Streamed without a length (chunked): refused once the count passes the cap.
    resp = requests.post(
        srv.url + "/v1/preprocess", data=iter([raw[i : i + 4096] for i in range(0, len(raw), 4096)])
    )
    assert_error(resp, 413, "LimitError")
    assert "limits.max_body_bytes" in resp.json()["error"]["message"]
    # Under the cap it is served as usual.
    ok = {"input_ids": fam.prompt(1), "images": [data_url(images["jpeg_64x48"])]}
    assert len(json.dumps(ok)) < cap
    assert post(srv, "/v1/preprocess", ok).status_code == 200
    assert requests.get(srv.url + "/health", timeout=10).status_code == 200


def test_unknown_paths_and_methods_answer_json(server: MmServer) -> None:
    assert_error(requests.get(server.url + "/v1/nope", timeout=10), 404, "NotFound")
    assert_error(requests.get(server.url + "/v1/preprocess", timeout=10), 405, "MethodNotAllowed")


def test_client_raises_the_typed_error(
    fam: FamilySetup, images: dict[str, bytes], client: Client
) -> None:
    with pytest.raises(LayoutError) as info:
        client.preprocess(MmInput(input_ids=fam.prompt(0), images=[images["jpeg_64x48"]]))
    assert info.value.status == 400  # type: ignore[attr-defined]
    with pytest.raises(ServerError) as err:
        client.preprocess({"input_ids": "x"})
    assert err.value.status == 422 and err.value.error_type == "ValidationError"


# -- secure defaults ---------------------------------------------------------------------------


def test_url_to_loopback_refused_by_default(
    fam: FamilySetup, images: dict[str, bytes], server: MmServer, http_server: Any
) -> None:
    for url in (http_server.put("a.jpg", images["jpeg_64x48"]), "http://localhost:1/x.jpg"):
        body = {"input_ids": fam.prompt(1), "images": [url]}
        resp = post(server, "/v1/preprocess", body)
        assert_error(resp, 400, "FetchError", 0)
        assert "allow_private_networks=false" in resp.json()["error"]["message"]
    assert not http_server.seen, "the refused URL was fetched"


def test_private_networks_when_the_spec_allows_them(
    fam: FamilySetup, images: dict[str, bytes], http_server: Any, launch: Any
) -> None:
    srv = launch(fam.spec(fetch={"allow_private_networks": True}))
    url = http_server.put("b.jpg", images["jpeg_120x90"])
    got = Client(srv.url).preprocess(MmInput(input_ids=fam.prompt(1), images=[url]))
    want = fam.pipeline.process(MmInput(input_ids=fam.prompt(1), images=[images["jpeg_120x90"]]))
    assert_same_output(got, want)


def test_file_sources_refused_unless_file_root(
    fam: FamilySetup, images: dict[str, bytes], server: MmServer, tmp_path: Path, launch: Any
) -> None:
    inside = tmp_path / "root" / "a.png"
    inside.parent.mkdir()
    inside.write_bytes(images["png_56x56"])
    outside = tmp_path / "b.png"
    outside.write_bytes(images["png_56x56"])
    body = {"input_ids": fam.prompt(1), "images": [str(inside)]}
    resp = post(server, "/v1/preprocess", body)
    assert_error(resp, 400, "FetchError", 0)
    assert "allow_file=false" in resp.json()["error"]["message"]

    rooted = launch(fam.spec(fetch={"file_root": str(inside.parent)}))
    got = Client(rooted.url).preprocess(MmInput(input_ids=fam.prompt(1), images=[str(inside)]))
    want = fam.pipeline.process(MmInput(input_ids=fam.prompt(1), images=[images["png_56x56"]]))
    assert_same_output(got, want)
    resp = post(rooted, "/v1/preprocess", {"input_ids": fam.prompt(1), "images": [str(outside)]})
    assert_error(resp, 400, "FetchError", 0)
    assert "file_root" in resp.json()["error"]["message"]


def test_server_spec_defaults_follow_what_the_document_sets(
    fam: FamilySetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = fam.registry
    monkeypatch.delenv("SGLANG_MM_THREADS", raising=False)

    def fetch(doc: dict[str, Any]) -> Any:
        return server_spec(doc, registry=reg).spec.fetch

    base = fam.spec()
    base.pop("fetch", None)
    f = fetch(base)
    assert (f.allow_private_networks, f.allow_file) == (False, False)
    f = fetch({**base, "fetch": {"file_root": "/srv"}})
    assert (f.allow_private_networks, f.allow_file, f.file_root) == (False, True, "/srv")
    # Written in the document, even with the library's default value: honoured as is.
    f = fetch({**base, "fetch": {"allow_private_networks": True, "allow_file": True}})
    assert (f.allow_private_networks, f.allow_file) == (True, True)
    f = fetch({**base, "fetch": {"allow_file": False, "file_root": "/srv"}})
    assert f.allow_file is False
    # A Spec object counts the fields it was built with.
    spec_obj = Spec.model_validate({**base, "fetch": {"allow_private_networks": True}})
    f = server_spec(spec_obj, registry=reg).spec.fetch
    assert (f.allow_private_networks, f.allow_file) == (True, False)
    # threads: the server's share unless the spec or $SGLANG_MM_THREADS sets it.
    assert server_spec(base, registry=reg, threads=3).spec.threads == 3
    assert server_spec({**base, "threads": 0}, registry=reg, threads=3).spec.threads == 0
    assert server_spec(base, registry=reg).spec.threads is None
    monkeypatch.setenv("SGLANG_MM_THREADS", "1")
    assert server_spec(base, registry=reg, threads=3).spec.threads is None
    # The output-defining fingerprint is unchanged by the server's policy.
    assert server_spec(base, registry=reg).fingerprint == fam.pipeline.spec_fingerprint


def test_workers_share_one_pool_of_every_core(launch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared pipeline's pool is the server's core count (the driver's one count), and
    each request's kernels get one worker's share of it; the spec's or the environment's
    ``threads`` is the pool when set."""
    from sglang_mm_core._threads import available_cores

    monkeypatch.delenv("SGLANG_MM_THREADS", raising=False)
    cores = available_cores()
    for workers in (1, 2, 3):
        pipe = launch(workers=workers).engine.pipeline
        assert (pipe.threads, pipe.par.request_threads) == (cores, max(1, cores // workers))
    pipe = launch({"family": "toy", "threads": 6}, workers=4).engine.pipeline
    assert (pipe.threads, pipe.par.request_threads) == (6, 1)
    monkeypatch.setenv("SGLANG_MM_THREADS", "4")
    pipe = launch(workers=2).engine.pipeline
    assert (pipe.threads, pipe.par.request_threads) == (4, 2)


def test_limit_fields_reach_the_body_and_the_client(
    fam: FamilySetup, images: dict[str, bytes], launch: Any
) -> None:
    srv = launch(fam.spec(limits={"max_image_pixels": 1000}))
    body = {"input_ids": fam.prompt(1), "images": [data_url(images["png_56x56"])]}
    resp = post(srv, "/v1/preprocess", body)
    assert_error(resp, 413, "LimitError", 0)
    assert resp.json()["error"]["fields"] == {
        "limit": "max_image_pixels",
        "limit_value": 1000,
        "value": 56 * 56,
    }
    with Client(srv.url) as c, pytest.raises(LimitError) as info:
        c.preprocess(MmInput(input_ids=fam.prompt(1), images=[images["png_56x56"]]))
    err = info.value
    assert (err.status, err.item, err.limit, err.limit_value, err.value) == (
        413,
        0,
        "max_image_pixels",
        1000,
        56 * 56,
    )
    assert str(err) == resp.json()["error"]["message"]


def test_ids_beyond_int32_round_trip(fam: FamilySetup, client: Client) -> None:
    ids = [*fam.prompt(0), 2**40, 2**62 + 3]
    got = client.preprocess(MmInput(input_ids=ids))
    np.testing.assert_array_equal(got.input_ids[-2:], np.array(ids[-2:], dtype=np.int64))


def test_errors_are_counted_by_type(server: MmServer) -> None:
    post(server, "/v1/preprocess", b"nope")
    text = requests.get(server.url + "/metrics", timeout=10).text
    assert 'sglang_mm_errors_total{type="ValidationError"}' in text


def test_fetch_error_type_round_trips_in_client(
    fam: FamilySetup, client: Client, http_server: Any
) -> None:
    url = http_server.url("/bytes/10")
    with pytest.raises(FetchError, match=r"127\.0\.0\.1 is a loopback address, refused by fetch"):
        client.preprocess(MmInput(input_ids=fam.prompt(1), images=[url]))
    with pytest.raises(LimitError, match=r"has 100 image\(s\), over limits\.max_items = \d+$"):
        client.preprocess(MmInput(input_ids=fam.prompt(100), images=[b"x"] * 100))


def test_a_bug_is_500_with_its_traceback_logged(
    images: dict[str, bytes], launch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from sglang_mm_toy import ToyFamily

    from sglang_mm_core import Registry

    class Broken(ToyFamily):
        name = "broken"

        def kernel(self, image: Any, plan: Any, *, codes: bool, threads: int) -> Any:
            raise RuntimeError("a bug in the plugin")

    reg = Registry()
    reg.register_family(Broken)
    srv = launch({"family": "broken"}, registry=reg)
    body = {"input_ids": [1, 3, 5, 4], "images": [data_url(images["png_56x56"])]}
    with caplog.at_level("ERROR", logger="sglang_mm.server"):
        resp = post(srv, "/v1/preprocess", body)
    assert_error(resp, 500, "InternalError")
    assert "a bug in the plugin" not in resp.text  # internals stay in the log
    assert "a bug in the plugin" in caplog.text and "Traceback" in caplog.text
    # The server carries on.
    assert_error(post(srv, "/v1/preprocess", {"input_ids": []}), 400, "MmRequestError")
