"""Videos through a real server on 127.0.0.1: a request mixing images and videos (bytes sent as
``data:`` URLs, a video with its own options as ``{"video": ..., "fps": ...}``) is answered in
both body formats, and in the compact form, with exactly what the in-process pipeline returns
for the same `MmInput` (every bit of ``pixel_values_videos``, ``video_grid_thw``,
``second_per_grid_ts``, the items' modality and seconds per grid step, the MRoPE positions);
``/v1/tokens`` counts from the headers what the pipeline makes; bad videos and bad options get
typed 4xx bodies naming the video."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import requests

from sglang_mm_core import MmInput, MmOutput, Pipeline, pipeline_from_spec
from sglang_mm_core.client import Client
from sglang_mm_core.conformance.video import make_clip
from sglang_mm_core.errors import (
    DecodeError,
    KernelArgumentError,
    LayoutError,
    MmRequestError,
    ServerError,
)
from sglang_mm_core.plugin import MRope
from sglang_mm_core.server import MmServer

VS, VE, IMAGE, VIDEO = 151652, 151653, 151655, 151656
SPEC: dict[str, Any] = {
    "family": "qwen_vl",
    "params": {"generation": "qwen2_5_vl", "resample": "aten_u8", "video_fps": 4.0},
    "limits": {"max_items": 8},
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
def client(server: MmServer) -> Iterator[Client]:
    with Client(server.url) as c:
        yield c


@pytest.fixture(scope="module")
def clips() -> dict[str, bytes]:
    return {
        "h264": make_clip("libx264", 96, 64, 9, seed=1),
        "mpeg4": make_clip("mpeg4", 70, 50, 5, rate=10, seed=2),
        "webm": make_clip("libvpx-vp9", 64, 48, 3, fmt="webm", seed=4),
    }


@pytest.fixture(scope="module")
def png() -> bytes:
    from PIL import Image

    img = np.random.default_rng(3).integers(0, 256, (40, 60, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()


def _vision(token: int) -> list[int]:
    return [VS, token, VE]


def mixed(clips: dict[str, bytes], png: bytes, rid: str | None = None) -> MmInput:
    """A video, an image, then a video with its own sampling: prompt order differs from the
    order of either list."""
    ids = [1, 2, *_vision(VIDEO), 3, *_vision(IMAGE), 4, *_vision(VIDEO), 5]
    videos: list[Any] = [clips["h264"], {"video": clips["mpeg4"], "nframes": 4, "max_pixels": 3000}]
    return MmInput(ids, [png], rid=rid, videos=videos)


def assert_same(got: MmOutput, want: MmOutput) -> None:
    assert (got.family, got.spec_fingerprint, got.rid) == (
        want.family,
        want.spec_fingerprint,
        want.rid,
    )
    np.testing.assert_array_equal(got.input_ids, want.input_ids)
    assert got.offsets == want.offsets
    assert isinstance(got.positions, MRope) and isinstance(want.positions, MRope)
    np.testing.assert_array_equal(got.positions.positions, want.positions.positions)
    assert got.positions.delta == want.positions.delta
    assert len(got.items) == len(want.items)
    for g, w in zip(got.items, want.items, strict=True):
        assert (g.modality, g.hash, g.tokens) == (w.modality, w.hash, w.tokens)
        assert g.geometry == w.geometry  # seconds_per_grid_t too, exactly
        gf = g.feature if hasattr(g.feature, "array") else g.feature.expand()
        wf = w.feature if hasattr(w.feature, "array") else w.feature.expand()
        assert gf.dtype == wf.dtype
        np.testing.assert_array_equal(gf.array, wf.array)
        assert sorted(g.aux) == sorted(w.aux)
        for name in w.aux:
            assert g.aux[name].dtype == w.aux[name].dtype, name
            np.testing.assert_array_equal(g.aux[name].array, w.aux[name].array)


def test_the_request_is_what_the_test_means(
    pipe: Pipeline, clips: dict[str, bytes], png: bytes
) -> None:
    out = pipe.process(mixed(clips, png))
    assert [it.modality for it in out.items] == ["video", "image", "video"]
    first, _, second = out.items
    assert sorted(first.aux) == ["second_per_grid_ts", "video_grid_thw"]
    assert first.geometry.seconds_per_grid_t is not None
    assert second.aux["video_grid_thw"].array.tolist()[0][0] == 2  # nframes 4: two steps
    assert first.feature.array.shape[1] == 3 * 2 * 14 * 14


@pytest.mark.parametrize("fmt", ["safetensors", "json"])
def test_answer_equals_the_pipeline(
    fmt: str, pipe: Pipeline, client: Client, clips: dict[str, bytes], png: bytes
) -> None:
    want = pipe.process(mixed(clips, png, rid=f"mixed-{fmt}"))
    got = client.preprocess(mixed(clips, png, rid=f"mixed-{fmt}"), fmt=fmt)  # type: ignore[arg-type]
    assert_same(got, want)


def test_compact_answer_equals_the_pipeline(
    pipe: Pipeline, client: Client, clips: dict[str, bytes], png: bytes
) -> None:
    want = pipe.process(mixed(clips, png), compact=True)
    got = client.preprocess(mixed(clips, png), compact=True)
    assert all(not hasattr(it.feature, "array") for it in got.items)
    assert_same(got, want)


def test_the_json_body_names_each_item(server: MmServer, clips: dict[str, bytes]) -> None:
    """A hand-written body: a bare base64 video and one with its options; the JSON answer
    says which item is which and carries the video's seconds per grid step."""
    b64 = base64.b64encode(clips["h264"]).decode()
    body = {
        "input_ids": [*_vision(VIDEO), 7, *_vision(VIDEO)],
        "videos": [
            b64,
            {
                "video": "data:video/mp4;base64," + base64.b64encode(clips["mpeg4"]).decode(),
                "fps": 2.0,
            },
        ],
    }
    resp = requests.post(server.url + "/v1/preprocess?format=json", json=body, timeout=60)
    assert resp.status_code == 200, resp.text
    items = resp.json()["items"]
    assert [it["modality"] for it in items] == ["video", "video"]
    assert all(it["seconds_per_grid_t"] > 0 for it in items)
    assert set(items[0]["aux"]) == {"video_grid_thw", "second_per_grid_ts"}
    with pipeline_from_spec(SPEC) as p:
        want = p.process(
            MmInput(
                body["input_ids"], videos=[clips["h264"], {"video": clips["mpeg4"], "fps": 2.0}]
            )
        )
    assert [it["tokens"] for it in items] == [it.tokens for it in want.items]
    assert [it["hash"] for it in items] == want.hashes


def test_tokens_count_videos_from_their_headers(
    pipe: Pipeline, client: Client, clips: dict[str, bytes], png: bytes
) -> None:
    count = client.tokens(mixed(clips, png))
    assert count == pipe.count_tokens(mixed(clips, png))
    out = pipe.process(mixed(clips, png))
    assert count.length == len(out.input_ids)
    assert count.per_item == [it.tokens for it in out.items]
    assert count.modalities == ["video", "image", "video"]


def test_a_count_the_header_cannot_give_is_a_400(client: Client, clips: dict[str, bytes]) -> None:
    """WebM states no frame count: the count says so rather than guess; processing works."""
    req = MmInput(_vision(VIDEO), videos=[clips["webm"]])
    with pytest.raises(MmRequestError) as e:
        client.tokens(req)
    assert (e.value.status, e.value.item, e.value.modality) == (400, 0, "video")
    assert "frame count" in str(e.value)
    assert [it.modality for it in client.preprocess(req).items] == ["video"]


def _error(resp: requests.Response) -> dict[str, Any]:
    assert resp.headers["content-type"].startswith("application/json")
    assert len(resp.content) < 2048
    err: dict[str, Any] = resp.json()["error"]
    return err


@pytest.mark.parametrize("path", ["/v1/preprocess", "/v1/tokens"])
def test_a_corrupt_video_is_a_400_naming_it(
    path: str, server: MmServer, client: Client, clips: dict[str, bytes], png: bytes
) -> None:
    bad = clips["h264"][:200]  # the header and nothing else: no frame to count or decode
    req = MmInput(
        [*_vision(IMAGE), *_vision(VIDEO), *_vision(VIDEO)], [png], videos=[clips["mpeg4"], bad]
    )
    call = client.preprocess if path == "/v1/preprocess" else client.tokens
    with pytest.raises(DecodeError) as e:
        call(req)
    assert (e.value.status, e.value.item, e.value.modality) == (400, 1, "video")
    assert "video 1" in str(e.value)


@pytest.mark.parametrize(
    ("video", "where"),
    [
        ({"video": "AAAA", "fps": -1}, "videos.0.fps"),
        ({"video": "AAAA", "frames_per_second": 2}, "videos.0.frames_per_second"),
        ({"fps": 2}, "videos.0.video"),
        (5, "videos.0"),
        ({"video": "AAAA", "nframes": 2.5}, "videos.0.nframes"),
    ],
)
def test_bad_video_options_are_a_422_naming_them(server: MmServer, video: Any, where: str) -> None:
    body = {"input_ids": _vision(VIDEO), "videos": [video]}
    resp = requests.post(server.url + "/v1/preprocess", json=body, timeout=30)
    assert resp.status_code == 422, resp.text
    err = _error(resp)
    assert err["type"] == "ValidationError"
    assert err["message"].startswith(where + ":"), err["message"]


def test_an_option_the_sampling_does_not_read_is_a_400(
    client: Client, clips: dict[str, bytes]
) -> None:
    req = MmInput(_vision(VIDEO), videos=[{"video": clips["h264"], "total_pixels": 10_000}])
    with pytest.raises(KernelArgumentError) as e:
        client.preprocess(req)
    assert e.value.status == 400 and "total_pixels" in str(e.value)


def test_placeholders_and_videos_must_agree(client: Client, clips: dict[str, bytes]) -> None:
    req = MmInput([*_vision(VIDEO), *_vision(VIDEO)], videos=[clips["h264"]])
    with pytest.raises(LayoutError) as e:
        client.preprocess(req)
    assert e.value.status == 400 and "video" in str(e.value)
    with pytest.raises(LayoutError):
        client.tokens(req)


def test_the_schema_documents_videos(server: MmServer) -> None:
    api = requests.get(server.url + "/openapi.json", timeout=10).json()
    body = api["paths"]["/v1/preprocess"]["post"]["requestBody"]["content"]["application/json"]
    videos = body["schema"]["properties"]["videos"]
    text = json.dumps(videos)
    for name in ("fps", "nframes", "max_pixels", "video_start", "resized_width"):
        assert name in text, name
    tokens = api["components"]["schemas"]["TokensAnswer"]["properties"]
    assert "modalities" in tokens


def test_a_good_request_after_the_refusals(
    pipe: Pipeline, client: Client, clips: dict[str, bytes], png: bytes
) -> None:
    with pytest.raises(ServerError):
        client.preprocess({"input_ids": _vision(VIDEO), "videos": [{"video": 1}]})
    assert_same(client.preprocess(mixed(clips, png)), pipe.process(mixed(clips, png)))
