"""Videos against transformers 5.23's GLM-4.xV video processors and processors, replayed from
goldens made by gen_video_goldens.py with torch and PyAV (versions in the fixture):

- the samplers (``Glm4vVideoProcessor.sample_frames`` at several requested rates,
  ``Glm46VVideoProcessor.sample_frames``) over a grid of frame counts and rates;
- whole requests on clips made by ``make_clip``: the sampled frames, ``video_grid_thw``,
  ``pixel_values_videos`` by the SHA-256 of its float32 bits, the expanded ids with the
  timestamp text tokenized by the model's tokenizer, ``mm_token_type_ids``, the positions of
  each model's ``get_rope_index``, and HF's refusals, under both readers (``video_decoder``
  torchcodec and pyav); header-only counts and the compact form agree with the pipeline."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _glm4v_corpus import make_input
from _glm4v_refs import encode
from _glm4v_tokenizer import write
from PIL import Image
from sglang_mm_glm4v import GLM4V, GLM4V_MOE, GLM46V, Glm4vFamily, Glm4vParams, mm_token_type_ids
from sglang_mm_glm4v.video import glm4v_frame_indices, glm46v_frame_indices, timestamp_texts

import sglang_mm_core as mm
from sglang_mm_core import plugin
from sglang_mm_core.conformance.video import clip_from_record, make_clip

GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "video_goldens.json").read_text())
PRESETS = {"glm4v": GLM4V, "glm4v_moe": GLM4V_MOE, "glm46v": GLM46V}


def _int_sha256(a: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.int64).tobytes()).hexdigest()


def _f32_sha256(a: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float32).tobytes()).hexdigest()


def test_goldens_record_their_reference() -> None:
    assert GOLDENS["transformers"] == "5.23.0" and GOLDENS["av"] == "18.1.0"
    assert {c["reader"] for c in GOLDENS["cases"]} == {"torchcodec", "pyav"}
    assert {c["video_processor"] for c in GOLDENS["cases"]} == {
        "Glm4vVideoProcessor",
        "Glm46VVideoProcessor",
    }


def _matches(got: list[int], want: Any) -> None:
    if isinstance(want, list):
        assert got == want
        return
    assert len(got) == want["n"] and got[:8] == want["head"] and got[-8:] == want["tail"]
    assert _int_sha256(got) == want["sha256"]


@pytest.mark.parametrize(
    "row",
    GOLDENS["sampling"],
    ids=[
        f"{r['processor'][:-14]}-{r['total']}@{r['fps']:.4g}-{r['requested_fps']}"
        for r in GOLDENS["sampling"]
    ],
)
def test_sampling(row: dict[str, Any]) -> None:
    total, fps = row["total"], row["fps"]
    if row["processor"] == "Glm46VVideoProcessor":
        got = glm46v_frame_indices(total, fps, temporal_patch_size=2)
    else:
        rate = 2.0 if row["requested_fps"] is None else row["requested_fps"]
        got = glm4v_frame_indices(total, fps, requested_fps=rate, max_duration=300)
    assert "error" not in row, row["error"]
    _matches(got, row["indices"])


def test_timestamp_texts() -> None:
    """Every other sampled frame's time, ``int(t)`` or one decimal (Python's correctly
    rounded, half to even on the double: 0.25 s writes 0.2)."""
    assert timestamp_texts([0, 13, 25, 38], 25.0, 2, "glm4v") == ["0", "1"]
    assert timestamp_texts([0, 13, 25, 38], 25.0, 2, "glm46v") == ["0.0 seconds", "1.0 seconds"]
    assert timestamp_texts([0, 1, 5, 6], 20.0, 2, "glm46v") == ["0.0 seconds", "0.2 seconds"]
    assert timestamp_texts([3], 1.0, 2, "glm4v") == ["3", "3"]


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tokenizers")
    return {t: write(t, root / t) for t in PRESETS}


def _spec(case: dict[str, Any], tokenizer: Path) -> dict[str, Any]:
    params = {**PRESETS[case["model_type"]], "tokenizer": str(tokenizer)}
    params["video_decoder"] = case["reader"]
    return {"family": "glm4v", "params": params, "threads": 2}


def _request(case: dict[str, Any]) -> mm.MmInput:
    videos: list[Any] = []
    for clip in case["clips"]:
        data = clip_from_record(clip)
        options: dict[str, Any] = {}
        kw = case["videos_kwargs"]
        if "fps" in kw:
            options["fps"] = kw["fps"]
        if "size" in kw:
            options["min_pixels"] = kw["size"]["shortest_edge"]
            options["max_pixels"] = kw["size"]["longest_edge"]
        videos.append({"video": data, **options} if options else data)
    images = [encode(Image.fromarray(make_input(case["image"])))] if case["image"] else []
    return mm.MmInput(input_ids=case["prompt_ids"], images=images, videos=videos)


@pytest.mark.parametrize("case", GOLDENS["cases"], ids=[c["id"] for c in GOLDENS["cases"]])
def test_request(case: dict[str, Any], tokenizers: dict[str, Path]) -> None:
    req = _request(case)
    with mm.pipeline_from_spec(_spec(case, tokenizers[case["model_type"]])) as pipe:
        if "error" in case:
            # HF raises a ValueError in smart_resize (fewer frames than the temporal patch)
            assert case["error"]["raised_in"].endswith("smart_resize")
            with pytest.raises(mm.KernelArgumentError, match="temporal_patch_size"):
                pipe.process(req)
            with pytest.raises(mm.KernelArgumentError, match="temporal_patch_size"):
                pipe.count_tokens(req)
            return
        out = pipe.process(req)
        count = pipe.count_tokens(req)
    assert out.input_ids.tolist() == case["input_ids"]
    assert count.length == len(out.input_ids)
    assert count.per_item == [e - s + 1 for s, e in out.offsets]
    p = Glm4vParams(**PRESETS[case["model_type"]])
    assert _int_sha256(mm_token_type_ids(out.input_ids, p)) == case["mm_token_type_ids_sha256"]
    videos = [it for it in out.items if it.modality == "video"]
    grids = [it.aux["video_grid_thw"].array[0].tolist() for it in videos]
    assert grids == case["video_grid_thw"]
    pv = np.concatenate([it.feature.array for it in videos])
    assert list(pv.shape) == case["pixel_values_videos"]["shape"]
    assert _f32_sha256(pv) == case["pixel_values_videos"]["sha256"]
    if case["image"]:
        (image,) = [it for it in out.items if it.modality == "image"]
        assert _f32_sha256(image.feature.array) == case["pixel_values"]["sha256"]
    positions = out.positions
    assert isinstance(positions, mm.MRope)
    if case["positions"] is not None:
        np.testing.assert_array_equal(positions.positions, np.asarray(case["positions"]))
    assert _int_sha256(positions.positions) == case["positions_sha256"]
    assert positions.delta == case["delta"]
    # offsets: from a video's first image token to its last (the markers and timestamps
    # between its frames inside)
    ids = out.input_ids
    for it, (s, e) in zip(out.items, out.offsets, strict=True):
        assert ids[s] == ids[e] == p.image_token_id
        if it.modality == "video":
            assert ids[s - 1] == p.image_start_token_id and ids[e + 1] == p.image_end_token_id


def test_the_compact_form_of_a_video_expands_to_it(tokenizers: dict[str, Path]) -> None:
    (case,) = [c for c in GOLDENS["cases"] if c["id"] == "glm46v-h264"]
    req = _request(case)
    with mm.pipeline_from_spec(_spec(case, tokenizers["glm46v"])) as pipe:
        full = pipe.process(req).items[0].feature
        compact = pipe.process(req, compact=True).items[0].feature
    assert isinstance(compact, mm.CompactTensor) and isinstance(full, mm.Tensor)
    np.testing.assert_array_equal(compact.expand().array, full.array)


def test_videos_need_the_tokenizer() -> None:
    clip = make_clip("libx264", 64, 48, 30)
    with mm.pipeline_from_spec({"family": "glm4v", "params": {}}) as pipe:
        with pytest.raises(mm.UnsupportedModalityError, match="tokenizer"):
            pipe.process(mm.MmInput(input_ids=[151341, 151344, 151342], videos=[clip]))


@pytest.mark.parametrize(
    ("preset", "option", "match"),
    [
        (GLM46V, {"fps": 1.0}, "ignores a requested fps"),
        (GLM4V, {"nframes": 4}, "do not read it"),
        (GLM4V, {"video_start": 0.5}, "do not read it"),
    ],
)
def test_options_the_reference_does_not_read_are_refused(
    preset: dict[str, Any], option: dict[str, Any], match: str, tokenizers: dict[str, Path]
) -> None:
    clip = make_clip("libx264", 64, 48, 30)
    spec = {"family": "glm4v", "params": {**preset, "tokenizer": str(tokenizers["glm4v"])}}
    ids = [Glm4vParams(**preset).video_start_token_id, 151344]
    ids.append(Glm4vParams(**preset).video_end_token_id)
    with mm.pipeline_from_spec(spec) as pipe:
        with pytest.raises(mm.KernelArgumentError, match=match):
            pipe.process(mm.MmInput(input_ids=ids, videos=[{"video": clip, **option}]))


def test_video_placeholders_must_sit_between_their_markers(tokenizers: dict[str, Path]) -> None:
    clip = make_clip("libx264", 64, 48, 30)
    spec = {"family": "glm4v", "params": {"tokenizer": str(tokenizers["glm4v"])}}
    with mm.pipeline_from_spec(spec) as pipe:
        with pytest.raises(mm.LayoutError, match="151341 and 151342"):
            pipe.process(mm.MmInput(input_ids=[5, 151344, 6], videos=[clip]))


def test_the_family_is_pure_in_its_video_plan(tokenizers: dict[str, Path]) -> None:
    fam = Glm4vFamily({"tokenizer": str(tokenizers["glm4v"])})
    header = plugin.VideoHeader(1920, 1080, 9000, 30.0, 300.0, "h264")
    a = fam.video_plan(header, plugin.VideoOptions())
    b = fam.video_plan(header, plugin.VideoOptions())
    assert a == b and len(a.indices) == 600 and a.plan.geometry.grid[0] == 300
