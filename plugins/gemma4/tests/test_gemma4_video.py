"""Gemma 4 videos through ``pipeline_from_spec`` against transformers 5.23's ``Gemma4Processor``
with ``Gemma4VideoProcessor``, replayed from the goldens ``gen_video_goldens.py`` captured in a
torch venv (versions recorded): the same clips (rebuilt with ``make_clip``, checked by SHA-256),
read by HF through PyAV. Ids (the ``mm:ss`` timestamps tokenized by the same tokenizer.json),
``pixel_values_videos`` (every float32 bit), ``video_position_ids``, ``num_frames_per_video``,
the soft tokens per frame, offsets and header-only counts must agree; what HF refuses is
refused."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sglang_mm_gemma4 import Gemma4Family, sample_indices, timestamp_text

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.conformance.video import clip_from_record
from sglang_mm_core.errors import KernelArgumentError, UnsupportedModalityError

FIXTURES = Path(__file__).parent / "fixtures"
TOKENIZER = FIXTURES / "gemma4_tokenizer"
GOLDENS = json.loads((FIXTURES / "video_goldens.json").read_text())
CASES = GOLDENS["cases"]
FULL = [c for c in CASES if "error" not in c]
REFUSED = [c for c in CASES if "error" in c]
IMAGE, VIDEO = 258880, 258884


def test_goldens_record_their_reference() -> None:
    for key in ("torch", "torchvision", "transformers", "av", "tokenizers", "generator"):
        assert GOLDENS[key], key
    assert len(FULL) >= 10 and REFUSED


def params_of(case: dict[str, Any], *, as_option: bool = False) -> dict[str, Any]:
    """The spec params that say what the HF call's ``videos_kwargs`` said (``num_frames`` as
    the family's default, or left to the request's ``nframes`` option)."""
    kw = case["videos_kwargs"]
    params: dict[str, Any] = {"resample": "pil", "tokenizer": str(TOKENIZER)}
    if "num_frames" in kw and not as_option:
        params["video_num_frames"] = kw["num_frames"]
    if kw.get("do_sample_frames") is False:
        params["video_do_sample_frames"] = False
    if "max_soft_tokens" in kw:
        params["video_max_soft_tokens"] = kw["max_soft_tokens"]
    if "do_normalize" in kw:
        params["video_do_normalize"] = kw["do_normalize"]
    return params


def clips_of(case: dict[str, Any]) -> list[bytes]:
    return [clip_from_record(clip) for clip in case["clips"]]


def request_of(case: dict[str, Any], *, as_option: bool = False) -> MmInput:
    images = []
    if case["with_image"]:
        from PIL import Image

        img = np.random.default_rng(7).integers(0, 256, (150, 200, 3), dtype=np.uint8)
        png = io.BytesIO()
        Image.fromarray(img).save(png, format="PNG")  # lossless: HF was given the array
        images.append(png.getvalue())
    videos: list[Any] = clips_of(case)
    n = case["videos_kwargs"].get("num_frames")
    if as_option and n is not None:
        videos = [{"video": v, "nframes": n} for v in videos]
    return MmInput(case["prompt_ids"], images, videos=videos)


def sha(a: np.ndarray, dtype: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=dtype).tobytes()).hexdigest()


#: Every case with its frame count as the spec's param, and again as the request's option.
RUNS = [(c, False) for c in FULL] + [(c, True) for c in FULL if "num_frames" in c["videos_kwargs"]]


@pytest.mark.parametrize(
    ("case", "as_option"), RUNS, ids=[c["id"] + ("-option" if o else "") for c, o in RUNS]
)
def test_video_requests_equal_hf(case: dict[str, Any], as_option: bool) -> None:
    spec = {"family": "gemma4", "params": params_of(case, as_option=as_option)}
    with pipeline_from_spec(spec) as pipe:
        out = pipe.process(request_of(case, as_option=as_option))
        count = pipe.count_tokens(request_of(case, as_option=as_option))
    assert out.input_ids.tolist() == case["input_ids"]
    assert count.length == len(out.input_ids)
    assert count.per_item == [e - s + 1 for s, e in out.offsets]
    videos = [it for it in out.items if it.modality == "video"]
    assert len(videos) == len(case["clips"])
    pv = np.concatenate([v.feature.array for v in videos])
    pos = np.concatenate([v.aux["video_position_ids"].array for v in videos])
    want_pv, want_pos = case["pixel_values_videos"], case["video_position_ids"]
    assert list(pv.shape) == want_pv["shape"] and pv.dtype == np.float32
    assert sha(pv, np.float32) == want_pv["sha256"]
    assert list(pos.shape) == want_pos["shape"] and sha(pos, np.int64) == want_pos["sha256"]
    frames = [int(v.aux["num_frames_per_video"].array[0]) for v in videos]
    assert frames == case["num_frames_per_video"] == [len(i) for i in case["frame_indices"]]
    ids = np.asarray(case["input_ids"])
    spans = [o for o, it in zip(out.offsets, out.items, strict=True) if it.modality == "video"]
    for video, (s, e) in zip(videos, spans, strict=True):
        per_frame = int(video.aux["num_soft_tokens_per_video"].array[0])
        span = ids[s : e + 1]
        assert span[0] == span[-1] == VIDEO  # the offsets run from the first token to the last
        assert int((span == VIDEO).sum()) == per_frame * int(
            video.aux["num_frames_per_video"].array[0]
        )
    if case["with_image"]:
        (img,) = [it for it in out.items if it.modality == "image"]
        want = case["pixel_values"]
        assert sha(img.feature.array[None], np.float32) == want["sha256"]


@pytest.mark.parametrize("case", FULL[:3], ids=[c["id"] for c in FULL[:3]])
def test_compact_videos_expand_to_the_full_feature(case: dict[str, Any]) -> None:
    spec = {"family": "gemma4", "params": params_of(case)}
    with pipeline_from_spec(spec) as pipe:
        full = pipe.process(request_of(case))
        compact = pipe.process(request_of(case), compact=True)
    for a, b in zip(full.items, compact.items, strict=True):
        np.testing.assert_array_equal(b.feature.expand().array, a.feature.array)
    np.testing.assert_array_equal(full.input_ids, compact.input_ids)


@pytest.mark.parametrize("case", REFUSED, ids=[c["id"] for c in REFUSED])
def test_what_hf_refuses_is_refused(case: dict[str, Any]) -> None:
    spec = {"family": "gemma4", "params": params_of(case)}
    with pipeline_from_spec(spec) as pipe:
        with pytest.raises(KernelArgumentError, match=r"fewer than the 32 Gemma 4 samples"):
            pipe.process(request_of(case))
        with pytest.raises(KernelArgumentError, match=r"fewer than the 32 Gemma 4 samples"):
            pipe.count_tokens(request_of(case))


def test_sampling_and_timestamps_as_hf_computes_them() -> None:
    # default_sample_indices_fn: arange(n) * total // n; every frame without sampling.
    assert sample_indices(40, 32).tolist() == [i * 40 // 32 for i in range(32)]
    assert sample_indices(5, None).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(KernelArgumentError, match="fewer than the 6"):
        sample_indices(5, 6)
    # replace_video_token's f"{int(s // 60):02d}:{int(s % 60):02d}"
    assert [timestamp_text(s) for s in (0.0, 0.96, 59.99, 60.0, 125.5, 3600.0)] == [
        "00:00", "00:00", "00:59", "01:00", "02:05", "60:00",
    ]  # fmt: skip


def test_a_video_needs_the_tokenizer_and_refuses_unread_options() -> None:
    case = FULL[0]
    clip = clips_of(case)[0]
    with pipeline_from_spec({"family": "gemma4"}) as pipe:
        with pytest.raises(UnsupportedModalityError, match="'tokenizer'"):
            pipe.process(MmInput(case["prompt_ids"], videos=[clip]))
    spec = {"family": "gemma4", "params": {"tokenizer": str(TOKENIZER)}}
    with pipeline_from_spec(spec) as pipe:
        for option in ({"fps": 2.0}, {"max_pixels": 1000}, {"video_start": 1.0}):
            with pytest.raises(KernelArgumentError, match=f"video option {next(iter(option))}="):
                pipe.process(MmInput(case["prompt_ids"], videos=[{"video": clip, **option}]))
    spec["params"]["video_do_sample_frames"] = False
    with pipeline_from_spec(spec) as pipe:
        with pytest.raises(KernelArgumentError, match="keeps every frame"):
            pipe.process(MmInput(case["prompt_ids"], videos=[{"video": clip, "nframes": 4}]))


def test_video_features_follow_the_video_processor_whatever_the_image_backend() -> None:
    for resample in ("pil", "aten_u8"):
        f = Gemma4Family({"resample": resample}).video_features()
        assert f.resample == "aten_u8"
        assert f.table is not None and f.table.arithmetic == "torchvision"
        assert f.writer.pad_to == 630  # type: ignore[attr-defined]


@pytest.mark.parametrize("budget", [70, 280, 1120])
def test_header_counts_equal_the_processors_num_video_tokens(budget: int) -> None:
    """``Gemma4Processor._get_num_multimodal_tokens``' video count (frames x soft tokens, the
    text around them aside) from the plan of a header alone, across sizes and budgets."""
    from _gemma4_refs import processor

    from sglang_mm_core.plugin import VideoHeader, VideoOptions

    sizes = [(4, 48, 64), (32, 720, 1280), (7, 17, 33), (3, 336, 432), (9, 3000, 17)]
    kwargs = {"patch_size": 16, "pooling_kernel_size": 3, "max_soft_tokens": budget}
    want = processor()._get_num_multimodal_tokens(video_sizes=sizes, videos_kwargs=kwargs)
    fam = Gemma4Family({"tokenizer": str(TOKENIZER), "video_max_soft_tokens": budget})
    got = []
    for frames, h, w in sizes:
        header = VideoHeader(w, h, frames, 25.0, frames / 25.0, "h264")
        vplan = fam.video_plan(header, VideoOptions(nframes=frames))
        ids = np.asarray(vplan.plan.tokens.ids)  # type: ignore[union-attr]
        got.append(int((ids == VIDEO).sum()))
    assert got == want.num_video_tokens
