"""Whole video requests through ``pipeline_from_spec`` against transformers 5.23's
``Qwen2VLProcessor`` / ``Qwen2_5_VLProcessor`` and ``get_rope_index``, replayed from the
goldens ``gen_video_request_goldens.py`` captured in a torch venv (versions recorded): the
same clips (rebuilt here with ``make_clip`` and checked by SHA-256), read by HF through PyAV.
Ids, offsets, ``pixel_values_videos`` (every float32 bit), ``video_grid_thw``,
``second_per_grid_ts`` (its float32 bits) and the MRoPE positions and delta must be equal."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.conformance.video import clip_from_record
from sglang_mm_core.errors import MmRequestError

GOLDENS = json.loads(
    (Path(__file__).parent / "fixtures" / "video_request_goldens.json").read_text()
)
CASES = GOLDENS["cases"]
FULL = [c for c in CASES if "error" not in c]
REFUSED = [c for c in CASES if "error" in c]
VIDEO, IMAGE = 151656, 151655


def test_goldens_record_their_reference() -> None:
    for key in ("torch", "torchvision", "transformers", "av", "generator"):
        assert GOLDENS[key], key
    assert len(FULL) >= 12 and {c["generation"] for c in FULL} == {"qwen2_vl", "qwen2_5_vl"}


def params_of(case: dict[str, Any]) -> dict[str, Any]:
    """The family params that say what the HF call's ``videos_kwargs`` said."""
    kw = case["videos_kwargs"]
    params: dict[str, Any] = {"generation": case["generation"], "resample": "aten_u8"}
    if not kw["do_sample_frames"]:
        params["video_sampling"] = "none"
    elif "num_frames" in kw:
        params.update(video_sampling="hf", video_fps=None, video_num_frames=kw["num_frames"])
    else:
        params.update(video_sampling="hf", video_fps=kw["fps"])
    if "min_frames" in kw:
        params["video_min_frames"] = kw["min_frames"]
    if "size" in kw:
        params["video_min_pixels"] = kw["size"]["shortest_edge"]
        params["video_max_pixels"] = kw["size"]["longest_edge"]
    return params


def clips_of(case: dict[str, Any]) -> list[bytes]:
    return [clip_from_record(clip) for clip in case["clips"]]


def request_of(case: dict[str, Any]) -> MmInput:
    images = []
    if case["with_image"]:
        from PIL import Image

        img = np.random.default_rng(7).integers(0, 256, (150, 200, 3), dtype=np.uint8)
        png = io.BytesIO()
        Image.fromarray(img).save(png, format="PNG")  # lossless: HF was given the array
        images.append(png.getvalue())
    return MmInput(case["prompt_ids"], images, videos=clips_of(case))


def sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float32).tobytes()).hexdigest()


@pytest.mark.parametrize("case", FULL, ids=[c["id"] for c in FULL])
def test_video_request_equals_hf(case: dict[str, Any]) -> None:
    with pipeline_from_spec({"family": "qwen_vl", "params": params_of(case)}) as pipe:
        out = pipe.process(request_of(case))
    np.testing.assert_array_equal(out.input_ids, np.asarray(case["input_ids"], np.int64))
    ids = np.asarray(case["input_ids"])
    runs = _token_runs(ids)
    assert out.offsets == runs, "one inclusive (start, end) per item, in prompt order"
    videos = [it for it in out.items if it.modality == "video"]
    images = [it for it in out.items if it.modality == "image"]
    assert [it.modality for it in out.items] == [
        "video" if ids[s] == VIDEO else "image" for s, _ in runs
    ]
    assert len(videos) == len(case["clips"]) and len(images) == int(case["with_image"])

    want = case["pixel_values_videos"]
    feats = np.concatenate([v.feature.array for v in videos])
    assert feats.dtype == np.float32 and list(feats.shape) == want["shape"]
    assert sha(feats) == want["sha256"]
    grids = [v.aux["video_grid_thw"].array.tolist()[0] for v in videos]
    assert grids == case["video_grid_thw"]
    assert all(v.aux["video_grid_thw"].array.dtype == np.int64 for v in videos)

    secs = case.get("second_per_grid_ts")
    if case["generation"] == "qwen2_5_vl":
        got = [v.aux["second_per_grid_ts"].array for v in videos]
        assert all(a.dtype == np.float32 for a in got)
        assert np.concatenate(got).astype("<f4").tobytes().hex() == secs["float32_hex"]
    else:
        assert all("second_per_grid_ts" not in v.aux for v in videos)

    if case["with_image"]:
        assert sha(images[0].feature.array) == case["pixel_values"]["sha256"]
        assert images[0].aux["image_grid_thw"].array.tolist() == case["image_grid_thw"]

    np.testing.assert_array_equal(out.positions.positions, np.asarray(case["positions"], np.int64))
    assert out.positions.delta == case["delta"]


def _token_runs(ids: np.ndarray) -> list[tuple[int, int]]:
    """Each maximal run of one placeholder token, as the processor's ``mm_token_type_ids``
    marks them (inclusive ends)."""
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(ids):
        if ids[i] in (VIDEO, IMAGE):
            j = i
            while j + 1 < len(ids) and ids[j + 1] == ids[i]:
                j += 1
            runs.append((i, j))
            i = j + 1
        else:
            i += 1
    return runs


@pytest.mark.parametrize("case", FULL, ids=[c["id"] for c in FULL])
def test_count_tokens_agrees_with_the_request(case: dict[str, Any]) -> None:
    with pipeline_from_spec({"family": "qwen_vl", "params": params_of(case)}) as pipe:
        count = pipe.count_tokens(request_of(case))
    assert count.length == len(case["input_ids"])
    assert count.per_item == [e - s + 1 for s, e in _token_runs(np.asarray(case["input_ids"]))]


def remux_to_mp4(data: bytes) -> bytes:
    """The same packets in an MP4, whose header states the frame count WebM and Matroska
    leave out."""
    import av

    out_buf = io.BytesIO()
    with av.open(io.BytesIO(data)) as src, av.open(out_buf, "w", format="mp4") as dst:
        stream = src.streams.video[0]
        copy = dst.add_stream_from_template(stream)
        for packet in src.demux(stream):
            if packet.dts is not None:
                packet.stream = copy
                dst.mux(packet)
    return out_buf.getvalue()


@pytest.mark.parametrize("case", REFUSED, ids=[c["id"] for c in REFUSED])
def test_a_container_without_a_frame_count(case: dict[str, Any]) -> None:
    """HF's ``read_video_pyav`` fails on these (``stream.frames`` is 0: the golden records
    its error); we count the stream's packets, as qwen-vl-utils' backends count frames, so
    the answer is the one the same packets in an MP4 get. ``count_tokens`` reads headers
    only, so it says the count is missing rather than guess."""
    assert case["error"]["raised_in"].startswith(("video_utils.py", "video_processing_qwen2_vl"))
    (clip,) = clips_of(case)
    with pipeline_from_spec({"family": "qwen_vl", "params": params_of(case)}) as pipe:
        got = pipe.process(MmInput(case["prompt_ids"], videos=[clip]))
        want = pipe.process(MmInput(case["prompt_ids"], videos=[remux_to_mp4(clip)]))
        with pytest.raises(MmRequestError, match="states no frame count") as err:
            pipe.count_tokens(MmInput(case["prompt_ids"], videos=[clip]))
    assert err.value.modality == "video"
    np.testing.assert_array_equal(got.input_ids, want.input_ids)
    np.testing.assert_array_equal(got.items[0].feature.array, want.items[0].feature.array)
    np.testing.assert_array_equal(
        got.items[0].aux["video_grid_thw"].array, want.items[0].aux["video_grid_thw"].array
    )
    if case["clips"][0]["recipe"].get("vfr"):
        return  # the frame rate is each header's own (Matroska's average_rate is not MP4's)
    for key, aux in want.items[0].aux.items():
        np.testing.assert_array_equal(got.items[0].aux[key].array, aux.array)
    np.testing.assert_array_equal(got.positions.positions, want.positions.positions)
