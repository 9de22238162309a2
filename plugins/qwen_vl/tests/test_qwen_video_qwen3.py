"""Qwen3-VL and Qwen3.5 video requests through ``pipeline_from_spec`` against transformers
5.23's ``Qwen3VLProcessor`` (its timestamps before every temporal group, tokenized with the
whole text) and ``get_rope_index`` of ``Qwen3VLModel`` / ``Qwen3_5Model``, replayed from the
goldens ``gen_video_qwen3_goldens.py`` captured in a torch venv (versions recorded): the same
clips (rebuilt with ``make_clip``, checked by SHA-256), the same chat prompts' ids, the
tokenizer.json HF loaded (a fixture). Ids, offsets, ``pixel_values_videos`` (every float32
bit), ``video_grid_thw`` and the positions and delta must be equal; ``count_tokens`` agrees."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sglang_mm_qwen_vl import QWEN3_5, QWEN3_VL, QwenVLFamily, spec_from_hf
from sglang_mm_qwen_vl.timestamps import timestamp_seconds, timestamp_text

from sglang_mm_core import MmInput, load_spec, pipeline_from_spec
from sglang_mm_core.conformance.video import clip_from_record
from sglang_mm_core.errors import (
    KernelArgumentError,
    MmRequestError,
    SpecError,
    UnsupportedModalityError,
)
from sglang_mm_core.plugin import load_tokenizer

FIXTURES = Path(__file__).parent / "fixtures"
GOLDENS = json.loads((FIXTURES / "video_qwen3_goldens.json").read_text())
CASES = GOLDENS["cases"]
FULL = [c for c in CASES if "error" not in c]
REFUSED = [c for c in CASES if "error" in c]
PRESETS = {"qwen3_vl": QWEN3_VL, "qwen3_5": QWEN3_5}


def test_goldens_record_their_reference() -> None:
    for key in ("torch", "torchvision", "transformers", "tokenizers", "av", "generator"):
        assert GOLDENS[key], key
    assert GOLDENS["transformers"] == "5.23.0"
    assert len(FULL) >= 14 and {c["model"] for c in FULL} == {"qwen3_vl", "qwen3_5"}
    for info in GOLDENS["tokenizers_files"].values():
        data = (Path(__file__).parent / info["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == info["sha256"], info["path"]


def params_of(case: dict[str, Any], markers: str = "keep") -> dict[str, Any]:
    """The family params that say what the HF call's ``videos_kwargs`` said."""
    kw = case["videos_kwargs"]
    params: dict[str, Any] = {
        **PRESETS[case["model"]],
        "tokenizer": str(Path(__file__).parent / case["tokenizer"]),
        "resample": "aten_u8",
        "video_markers": markers,
    }
    if kw.get("do_sample_frames") is False:
        params["video_sampling"] = "none"
    elif "num_frames" in kw:
        params.update(video_fps=None, video_num_frames=kw["num_frames"])
    elif "fps" in kw:
        params["video_fps"] = kw["fps"]
    if kw.get("cap_pixels_per_frame"):
        params["video_cap_pixels_per_frame"] = True
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


def spans(case: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Per item, in prompt order, from HF's ids and grids: an image's run of image tokens; a
    video's first to last video token, through its ``t`` runs of them (its timestamps and inner
    markers inside)."""
    p = QwenVLFamily(PRESETS[case["model"]]).params
    ids = np.asarray(case["input_ids"])
    groups = iter(t for t, _, _ in case["video_grid_thw"])
    out: list[tuple[str, int, int]] = []
    i = 0
    while i < len(ids):
        if ids[i] in (p.image_token_id, p.video_token_id):
            token, runs = ids[i], 1 if ids[i] == p.image_token_id else next(groups)
            j = start = i
            for k in range(runs):
                while ids[j] != token:
                    j += 1
                while ids[j + 1] == token:
                    j += 1
                if k + 1 < runs:
                    j += 1
            out.append(("image" if token == p.image_token_id else "video", start, j))
            i = j + 1
        else:
            i += 1
    return out


@pytest.mark.parametrize("case", FULL, ids=[c["id"] for c in FULL])
def test_video_request_equals_hf(case: dict[str, Any]) -> None:
    with pipeline_from_spec({"family": "qwen_vl", "params": params_of(case)}) as pipe:
        out = pipe.process(request_of(case))
    np.testing.assert_array_equal(out.input_ids, np.asarray(case["input_ids"], np.int64))
    want_spans = spans(case)
    assert out.offsets == [(s, e) for _, s, e in want_spans]
    assert [it.modality for it in out.items] == [m for m, _, _ in want_spans]
    assert [it.tokens for it in out.items] == [e - s + 1 for _, s, e in want_spans]
    videos = [it for it in out.items if it.modality == "video"]
    images = [it for it in out.items if it.modality == "image"]
    assert len(videos) == len(case["clips"]) and len(images) == int(case["with_image"])

    want = case["pixel_values_videos"]
    feats = np.concatenate([v.feature.array for v in videos])
    assert feats.dtype == np.float32 and list(feats.shape) == want["shape"]
    assert sha(feats) == want["sha256"]
    assert [v.aux["video_grid_thw"].array.tolist()[0] for v in videos] == case["video_grid_thw"]
    assert all(set(v.aux) == {"video_grid_thw"} for v in videos)

    if case["with_image"]:
        assert sha(images[0].feature.array) == case["pixel_values"]["sha256"]
        assert images[0].aux["image_grid_thw"].array.tolist() == case["image_grid_thw"]

    np.testing.assert_array_equal(out.positions.positions, np.asarray(case["positions"], np.int64))
    assert out.positions.delta == case["delta"]


@pytest.mark.parametrize("case", FULL, ids=[c["id"] for c in FULL])
def test_count_tokens_agrees_with_the_request(case: dict[str, Any]) -> None:
    with pipeline_from_spec({"family": "qwen_vl", "params": params_of(case)}) as pipe:
        count = pipe.count_tokens(request_of(case))
    assert count.length == len(case["input_ids"])
    assert count.per_item == [e - s + 1 for _, s, e in spans(case)]
    assert count.modalities == [m for m, _, _ in spans(case)]


@pytest.mark.parametrize("case", FULL, ids=[c["id"] for c in FULL])
def test_timestamps_are_hfs(case: dict[str, Any]) -> None:
    """The texts (recorded from the processor's own ``_calculate_timestamps``), from the frames
    HF sampled and the rate it read; and each tokenized alone is what HF's whole-text
    tokenization put before each group."""
    tok = load_tokenizer(Path(__file__).parent / case["tokenizer"])
    ids = case["input_ids"]
    p = QwenVLFamily(PRESETS[case["model"]]).params
    for meta, indices, texts in zip(
        case["video_metadata"], case["frame_indices"], case["timestamps"], strict=True
    ):
        secs = timestamp_seconds(indices, meta["fps"], 2)
        assert [timestamp_text(s) for s in secs] == texts
        for text in set(texts):
            want = [*tok.ids(text), p.vision_start_token_id]
            assert any(ids[i : i + len(want)] == want for i in range(len(ids))), text


@pytest.mark.parametrize("case", REFUSED, ids=[c["id"] for c in REFUSED])
def test_what_hf_refuses_is_refused(case: dict[str, Any]) -> None:
    """One frame: Qwen3's ``smart_resize`` refuses fewer frames than ``temporal_patch_size``."""
    assert "temporal_factor" in case["error"]["message"]
    with pipeline_from_spec({"family": "qwen_vl", "params": params_of(case)}) as pipe:
        with pytest.raises(KernelArgumentError, match="temporal_patch_size") as err:
            pipe.process(request_of(case))
        assert err.value.modality == "video"
        with pytest.raises(KernelArgumentError, match="temporal_patch_size"):
            pipe.count_tokens(request_of(case))


def test_a_qwen3_video_without_a_tokenizer_names_the_param() -> None:
    case = FULL[0]
    params = {k: v for k, v in params_of(case).items() if k != "tokenizer"}
    with pipeline_from_spec({"family": "qwen_vl", "params": params}) as pipe:
        for call in (pipe.process, pipe.count_tokens):
            with pytest.raises(UnsupportedModalityError, match="'tokenizer'"):
                call(request_of(case))
        # images need no tokenizer
        fam = QwenVLFamily(params)
        assert fam.timestamp_tokenizer is None and fam.plan(64, 64).length > 0


def test_a_bad_tokenizer_fails_the_spec(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{not json")
    for bad in (str(tmp_path / "missing"), str(tmp_path), str(tmp_path / "tokenizer.json")):
        with pytest.raises(SpecError, match=r"params\.tokenizer"):
            load_spec({"family": "qwen_vl", "params": {**QWEN3_VL, "tokenizer": bad}})


def test_the_tokenizer_is_loaded_once_per_path() -> None:
    d = FIXTURES / "qwen3_tokenizer"
    a = QwenVLFamily({**QWEN3_VL, "tokenizer": str(d)})
    b = QwenVLFamily({**QWEN3_VL, "tokenizer": str(d / "tokenizer.json")})
    assert a.timestamp_tokenizer is b.timestamp_tokenizer is load_tokenizer(d)


def test_spec_from_hf_names_the_directorys_tokenizer(tmp_path: Path) -> None:
    config = {
        "model_type": "qwen3_vl",
        "image_token_id": 151655,
        "video_token_id": 151656,
        "vision_start_token_id": 151652,
        "vision_end_token_id": 151653,
        "vision_config": {"patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2},
    }
    pp = {
        "patch_size": 16,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "size": {"shortest_edge": 65536, "longest_edge": 16777216},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(pp))
    assert spec_from_hf(tmp_path)["params"]["tokenizer"] is None
    src = FIXTURES / "qwen3_tokenizer" / "tokenizer.json"
    (tmp_path / "tokenizer.json").write_bytes(src.read_bytes())
    spec = spec_from_hf(tmp_path)
    assert spec["params"]["tokenizer"] == str((tmp_path / "tokenizer.json").resolve())
    assert QwenVLFamily(spec["params"]).timestamp_tokenizer is not None
    qwen2 = {**config, "model_type": "qwen2_vl", "vision_config": {"patch_size": 14}}
    (tmp_path / "config.json").write_text(json.dumps(qwen2))
    (tmp_path / "preprocessor_config.json").write_text("{}")
    assert spec_from_hf(tmp_path)["params"]["tokenizer"] is None  # only Qwen3 reads it


def test_qwen3_refuses_the_per_call_frame_bounds_hf_ignores() -> None:
    case = FULL[0]
    (clip,) = clips_of(case)
    with pipeline_from_spec({"family": "qwen_vl", "params": params_of(case)}) as pipe:
        for name in ("min_frames", "max_frames"):
            req = MmInput(case["prompt_ids"], videos=[{"video": clip, name: 2}])
            with pytest.raises(MmRequestError, match=f"video_{name} param"):
                pipe.process(req)


# -- transformers < 5.10: the expansion replaces the prompt's markers (video_markers "replace")

T4 = json.loads((FIXTURES / "video_qwen3_t4_goldens.json").read_text())
T4_FULL = [c for c in T4["cases"] if "error" not in c and "skipped" not in c]


def joined(case: dict[str, Any]) -> bool:
    """Whether text ends right before a video's ``<|vision_start|>`` in the prompt (``Video
    1: `` of Qwen's template with ``add_vision_id``)."""
    return ": <|vision_start|><|video_pad|>" in case["prompt"]


def test_t4_goldens_record_their_reference() -> None:
    assert T4["transformers"] == "4.57.1" and len(T4_FULL) >= 10
    for model, digest in T4["tokenizers_files"].items():
        assert digest == GOLDENS["tokenizers_files"][model]["sha256"], model
    assert any(joined(c) for c in T4_FULL) and any(not joined(c) for c in T4_FULL)


@pytest.mark.parametrize("case", T4_FULL, ids=[c["id"] for c in T4_FULL])
def test_replace_markers_equals_transformers_4(case: dict[str, Any]) -> None:
    """Ids, offsets, pixels, grids, positions and the count equal 4.57's where the prompt puts
    a special token or a newline before the markers. Where it puts text (``Video 1: ``), 4.57
    tokenized that text together with the first timestamp: its ``" <"`` is one token where ours
    are two (the prompt's ``" "``, then the timestamp's ``"<"``), once per such video; all else
    is equal."""
    with pipeline_from_spec({"family": "qwen_vl", "params": params_of(case, "replace")}) as pipe:
        out = pipe.process(request_of(case))
        count = pipe.count_tokens(request_of(case))
    assert count.length == len(out.input_ids)
    assert count.per_item == [e - s + 1 for s, e in out.offsets]
    got = out.input_ids.tolist()
    want = case["input_ids"]
    if joined(case):
        tok = load_tokenizer(Path(__file__).parent / case["tokenizer"])
        space, lt, space_lt = (tok.token_id(t) for t in ("Ġ", "<", "Ġ<"))
        merged, k = [], 0
        while k < len(got):
            if got[k : k + 2] == [space, lt]:
                merged.append(space_lt)
                k += 2
            else:
                merged.append(got[k])
                k += 1
        assert len(got) - len(merged) == case["prompt"].count(": <|vision_start|><|video_pad|>")
        assert merged == want
        return
    assert got == want
    want_spans = spans(case)
    assert out.offsets == [(s, e) for _, s, e in want_spans]
    videos = [it for it in out.items if it.modality == "video"]
    feats = np.concatenate([v.feature.array for v in videos])
    assert sha(feats) == case["pixel_values_videos"]["sha256"]
    assert [v.aux["video_grid_thw"].array.tolist()[0] for v in videos] == case["video_grid_thw"]
    np.testing.assert_array_equal(out.positions.positions, np.asarray(case["positions"], np.int64))
    assert out.positions.delta == case["delta"]


def test_replace_markers_needs_qwen3_and_strict_layout() -> None:
    with pytest.raises(SpecError, match="qwen3_vl"):
        load_spec({"family": "qwen_vl", "params": {"video_markers": "replace"}})
    with pytest.raises(SpecError, match="strict_layout"):
        load_spec(
            {
                "family": "qwen_vl",
                "params": {**QWEN3_VL, "video_markers": "replace", "strict_layout": False},
            }
        )


def test_qwen_vl_utils_sampling_under_qwen3() -> None:
    """No qwen-vl-utils reference runs here (see the goldens' ``qwen_vl_utils_skipped``): its
    frames are the tested sampling functions' (absolute torchcodec indices, a time range
    included), the timestamps come from them and the container's rate as Qwen3VLProcessor
    computes them from qwen-vl-utils' metadata, and count_tokens agrees."""
    from sglang_mm_qwen_vl.video_sampling import qwen_vl_utils_frame_indices

    case = next(c for c in FULL if c["id"] == "qwen3-small-long-fps4")
    (clip,) = clips_of(case)
    params = {**params_of(case), "video_sampling": "qwen_vl_utils"}
    tok = load_tokenizer(Path(__file__).parent / case["tokenizer"])
    fps = case["video_metadata"][0]["fps"]
    total = case["video_metadata"][0]["total_num_frames"]
    with pipeline_from_spec({"family": "qwen_vl", "params": params}) as pipe:
        for options in ({}, {"video_start": 0.5, "video_end": 2.0}, {"nframes": 6}):
            req = MmInput(case["prompt_ids"], videos=[{"video": clip, **options}])
            out = pipe.process(req)
            assert pipe.count_tokens(req).length == len(out.input_ids)
            idx = qwen_vl_utils_frame_indices(total, fps, reader="torchcodec", **options)
            ids = out.input_ids.tolist()
            for text in (timestamp_text(s) for s in timestamp_seconds(idx.tolist(), fps, 2)):
                want = [*tok.ids(text), 151652]
                assert any(ids[i : i + len(want)] == want for i in range(len(ids))), text
            ((t, _, _),) = out.items[0].aux["video_grid_thw"].array.tolist()
            assert t == -(-len(idx) // 2)
