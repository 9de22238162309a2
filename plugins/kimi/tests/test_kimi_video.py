"""Videos against transformers' ``Kimi_K25Processor`` end to end (``Kimi_K25VideoProcessor``'s
sampling, chunks of 4, per-frame resize and zero padding; the chunk timestamps and markers in
the ids), replayed from goldens of gen_video_goldens.py (torch venv) on clips that
`make_clip` makes again here: the whole expanded ``input_ids``, ``pixel_values_videos`` by the
SHA-256 of its float32 bits and sample values, ``video_grid_thw`` per chunk; the header-only
count agrees with the pipeline."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _kimi_corpus import make_input
from _kimi_refs import TOKENIZER_JSON, VIDEO_TOKEN_ID, ids
from PIL import Image
from sglang_mm_kimi import KimiFamily
from sglang_mm_kimi.video import sample_indices, timestamp_text

import sglang_mm_core as mm
from sglang_mm_core.conformance.video import make_clip

GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "video_goldens.json").read_text())
SPEC = {
    "family": "kimi",
    "params": {
        "resample": "aten_u8",
        "video_token_id": VIDEO_TOKEN_ID,
        "tokenizer": str(TOKENIZER_JSON),
    },
    "decode": {"alpha": "white", "exif_orientation": True},
}


def _sha256(a: Any) -> str:
    if isinstance(a, bytes):
        return hashlib.sha256(a).hexdigest()
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "PNG")
    return buf.getvalue()


def _request(case: dict[str, Any]) -> mm.MmInput:
    clip = case["clip"]
    data = make_clip(clip["codec"], clip["w"], clip["h"], clip["n"], rate=clip["rate"])
    assert _sha256(data) == case["clip_sha256"], "clip bytes changed (PyAV?): rerun the generator"
    kw = case["videos_kwargs"]
    video: dict[str, Any] = {"video": data}
    if kw.get("num_frames") is not None:
        video["nframes"] = kw["num_frames"]
    elif kw.get("fps") is not None:
        video["fps"] = kw["fps"]
    images = [_png(make_input(case["image"]))] if case["image"] else []
    return mm.MmInput(input_ids=ids(case["text"]), images=images, videos=[video])


def test_goldens_record_their_reference() -> None:
    meta = GOLDENS["meta"]
    assert meta["transformers"] == "5.23.0" and "Kimi_K25VideoProcessor" in meta["reference"]
    assert meta["tokenizer_sha256"] == _sha256(TOKENIZER_JSON.read_bytes())


@pytest.mark.parametrize("case", GOLDENS["cases"], ids=[c["id"] for c in GOLDENS["cases"]])
def test_video_matches_kimi_processor(case: dict[str, Any]) -> None:
    req = _request(case)
    with mm.pipeline_from_spec(SPEC) as pipe:
        out = pipe.process(req)
        count = pipe.count_tokens(req)
    assert out.input_ids.tolist() == case["input_ids"]
    assert count.length == len(out.input_ids)
    assert count.per_item == [e - s + 1 for s, e in out.offsets]
    video = next(it for it in out.items if it.modality == "video")
    got = video.feature.array
    assert got.dtype == np.float32 and list(got.shape) == case["pixel_values_videos_shape"]
    assert video.aux["video_grid_thw"].array.tolist() == case["video_grid_thw"]
    assert video.aux["num_chunks_per_video"].array.tolist() == [len(case["video_grid_thw"])]
    want = np.asarray(case["samples"], np.float32)
    at = np.array([got[p, c, y, x] for p, c, y, x in GOLDENS["meta"]["sample_points"]], np.float32)
    np.testing.assert_array_equal(at.view(np.uint32), want.view(np.uint32))
    assert _sha256(got) == case["pixel_values_videos_sha256"]
    if case["image"]:
        image = next(it for it in out.items if it.modality == "image")
        assert _sha256(image.feature.array) == case["pixel_values_sha256"]
    # The offsets run from the first video token to the last, the chunks' texts between.
    ((s, e),) = [o for o, it in zip(out.offsets, out.items, strict=True) if it.modality == "video"]
    assert out.input_ids[s] == out.input_ids[e] == VIDEO_TOKEN_ID


def test_compact_video_expands_to_the_full_one() -> None:
    case = GOLDENS["cases"][0]
    with mm.pipeline_from_spec(SPEC) as pipe:
        full = pipe.process(_request(case)).items[0].feature.array
        compact = pipe.process(_request(case), compact=True).items[0].feature
    np.testing.assert_array_equal(compact.expand().array, full)


def test_sampling_and_timestamps() -> None:
    assert sample_indices(23, 10.0, fps=2.0, nframes=None) == [0, 5, 11, 17]
    assert sample_indices(40, 25.0, fps=None, nframes=5) == [0, 8, 16, 24, 32]
    assert sample_indices(3, 25.0, fps=2.0, nframes=None) == [0]  # at least one frame
    with pytest.raises(mm.KernelArgumentError, match="more frames than"):
        sample_indices(4, 25.0, fps=None, nframes=5)
    assert timestamp_text(0.0) == "00:00:00.000"
    assert timestamp_text(3725.4999) == "01:02:05.499"


def test_videos_need_the_token_id_and_the_tokenizer() -> None:
    clip = make_clip("libx264", 64, 48, 5)
    params = dict(SPEC["params"])  # type: ignore[arg-type]
    del params["tokenizer"]
    with mm.pipeline_from_spec({"family": "kimi", "params": params}) as pipe:
        with pytest.raises(mm.UnsupportedModalityError, match="'tokenizer'"):
            pipe.process(mm.MmInput([1000, VIDEO_TOKEN_ID], videos=[clip]))
    with mm.pipeline_from_spec({"family": "kimi"}) as pipe:  # no video_token_id
        for call in (pipe.process, pipe.count_tokens):
            with pytest.raises(mm.UnsupportedModalityError, match="'video_token_id'"):
                call(mm.MmInput([1000, VIDEO_TOKEN_ID], videos=[clip]))
        png = io.BytesIO()  # images are served all the same
        Image.new("RGB", (64, 48)).save(png, format="PNG")
        assert pipe.process(mm.MmInput([1000, 163605], images=[png.getvalue()])).items
    assert KimiFamily().plan(64, 48).content == 6  # images need neither (84x56: 4 x 6 patches)


def test_unread_options_are_refused() -> None:
    clip = make_clip("libx264", 64, 48, 5)
    with mm.pipeline_from_spec(SPEC) as pipe:
        with pytest.raises(mm.KernelArgumentError, match="max_pixels"):
            pipe.process(
                mm.MmInput([1000, VIDEO_TOKEN_ID], videos=[{"video": clip, "max_pixels": 100}])
            )


def test_videos_under_the_checkpoint_reference_are_refused() -> None:
    params = {**SPEC["params"], "resample": "pil"}  # type: ignore[dict-item]
    with mm.pipeline_from_spec({"family": "kimi", "params": params}) as pipe:
        with pytest.raises(mm.UnsupportedModalityError, match="resample 'aten_u8'"):
            pipe.process(
                mm.MmInput([1000, VIDEO_TOKEN_ID], videos=[make_clip("libx264", 64, 48, 5)])
            )
