"""Goldens of transformers' Qwen3-VL *processor* on real clips, end to end, for Qwen3-VL and
Qwen3.5 video requests (the timestamps before every temporal group): each clip is made by
`sglang_mm_core.conformance.video.make_clip` (recipe and SHA-256 recorded) and its path
handed to ``Qwen3VLProcessor`` as a user does::

    processor(text=[prompt], images=[image] or None, videos=[str(path), ...],
              return_tensors="np", return_metadata=True, **videos_kwargs)

so HF reads the clip (``load_video``, PyAV, as in ``gen_video_request_goldens.py``), samples
its frames (``Qwen3VLVideoProcessor.sample_frames``), resizes and patchifies them
(torchvision), writes each temporal group's ``<t seconds>`` text from the frames' indices and
the container's rate (``Qwen3VLProcessor._calculate_timestamps``) and tokenizes the whole
text. The positions are ``get_rope_index`` of ``Qwen3VLModel`` and of ``Qwen3_5Model``
(asserted equal) on the processor's outputs.

The tokenizer is a real byte-level BPE ``tokenizer.json`` trained here on a small corpus
(Qwen's pre-tokenizer regex and NFC, digits split one by one, ``Ġseconds`` and ``Ġ<`` tokens), with
Qwen3-VL's (and, in a second file, Qwen3.5's) special-token ids, and loaded by HF the way a
model directory is: ``Qwen2Tokenizer.from_pretrained(dir)`` (transformers 5 rebuilds its
backend from the file's vocabulary and merges). Both files are written to
``fixtures/qwen3_tokenizer/`` and ``fixtures/qwen3_5_tokenizer/``, for the tests to load with
the ``tokenizers`` package. The prompts are chat prompts as Qwen3-VL's template writes them,
tokenized by the same tokenizer (the ids a client sends).

Runs in the torch venv (not CI); writes fixtures/video_qwen3_goldens.json with every
version::

    /work/torchvenv/bin/python plugins/qwen_vl/tests/gen_video_qwen3_goldens.py

qwen-vl-utils is not run here: its readers need torchcodec, decord or torchvision < 0.26
(``gen_video_qvu_goldens.py`` says why), none of which this venv has."""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import sys
import tempfile
import traceback
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen_video_request_goldens as base  # noqa: E402

OUT = HERE / "fixtures" / "video_qwen3_goldens.json"
TOKENIZER_DIRS = {
    "qwen3_vl": HERE / "fixtures" / "qwen3_tokenizer",
    "qwen3_5": HERE / "fixtures" / "qwen3_5_tokenizer",
}
GENERATOR = "plugins/qwen_vl/tests/gen_video_qwen3_goldens.py"
MERGE = 2

#: Qwen's pre-tokenizer regex (transformers' qwen2 ``PRETOKENIZE_REGEX``, Qwen's tokenizer.json)
QWEN_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""
)
#: The special tokens of each model, by id (Qwen3-VL's tokenizer.json; Qwen3.5's vision ids
#: are its config.json's, its chat ids are placed just below them).
SPECIAL = {
    "qwen3_vl": {
        "<|endoftext|>": 151643,
        "<|im_start|>": 151644,
        "<|im_end|>": 151645,
        "<|vision_start|>": 151652,
        "<|vision_end|>": 151653,
        "<|vision_pad|>": 151654,
        "<|image_pad|>": 151655,
        "<|video_pad|>": 151656,
    },
    "qwen3_5": {
        "<|endoftext|>": 248044,
        "<|im_start|>": 248045,
        "<|im_end|>": 248046,
        "<|vision_start|>": 248053,
        "<|vision_end|>": 248054,
        "<|vision_pad|>": 248055,
        "<|image_pad|>": 248056,
        "<|video_pad|>": 248057,
    },
}
CORPUS = [
    "You are a helpful assistant.",
    "Describe this video.",
    "What happens in the video, and what is in the image?",
    "Compare the two videos.",
    "Video 1: Video 2: Picture 1:",
    "Video 1: <0.5 seconds> Video 2: <1.0 seconds>",  # so that " <" is one token, as in Qwen's
    "user assistant system",
    *[f"<{t / 10:.1f} seconds>" for t in range(0, 200, 7)],
]

V = "<|vision_start|><|video_pad|><|vision_end|>"
I = "<|vision_start|><|image_pad|><|vision_end|>"  # noqa: E741
SYSTEM = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"


def chat(user: str) -> str:
    """Qwen3-VL's chat template for one user turn and the generation prompt."""
    return f"{SYSTEM}<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


PROMPTS = {
    "video": chat(f"{V}Describe this video."),
    "video-id": chat(f"Video 1: {V}Describe this video."),
    "two-videos": chat(f"Video 1: {V}Video 2: {V}Compare the two videos."),
    "image-video": chat(f"{I}{V}What happens in the video, and what is in the image?"),
    "video-image": chat(f"{V}{I}What happens in the video, and what is in the image?"),
    "bare": f"{V}",
}

H264, HEVC, MPEG4, ONE, HD = base.H264, base.HEVC, base.MPEG4, base.ONE, base.HD
SMALL_LONG, RATE30, VFR_MP4, ODD_444 = base.SMALL_LONG, base.RATE30, base.VFR_MP4, base.ODD_444
RATE10 = {"codec": "libx264", "w": 64, "h": 64, "n": 24, "rate": 10}
DEFAULT: dict[str, Any] = {}  # Qwen3VLVideoProcessor's defaults: fps 2, min_frames 4
EVERY = {"do_sample_frames": False}

#: (id, model, clip recipes, prompt, with the image, videos_kwargs, why)
CASES: list[tuple[str, str, list[dict[str, Any]], str, bool, dict[str, Any], str]] = [
    ("qwen3-h264-default", "qwen3_vl", [H264], "video", False, DEFAULT,
     "the defaults: fps 2 -> 2 frames, raised to min_frames 4; timestamps 0.2 and 1.0"),
    ("qwen3-h264-every-frame", "qwen3_vl", [H264], "video-id", False, EVERY,
     "every frame: grid t 15 > max(h, w) / 2; 'Video 1: ' before the markers"),
    ("qwen3-mpeg4-3-frames", "qwen3_vl", [MPEG4], "video", False, EVERY,
     "an odd frame count: the last index repeated for the last group's timestamp"),
    ("qwen3-one-frame", "qwen3_vl", [ONE], "video", False, DEFAULT,
     "one frame: Qwen3's smart_resize refuses t < temporal_patch_size"),
    ("qwen3-small-long-fps4", "qwen3_vl", [SMALL_LONG], "video", False, {"fps": 4.0},
     "fps 4 of 60 frames at 25: 9 frames, t 5, grid 4 x 4"),
    ("qwen3-rate30-fps1", "qwen3_vl", [RATE30], "video", False, {"fps": 1.0},
     "a 30 fps clip: timestamps at thirds of a second"),
    ("qwen3-rate10-every-frame", "qwen3_vl", [RATE10], "video", False, EVERY,
     "timestamps on .x5 ties (0.05, 0.25, ...): Python's format of the binary value"),
    ("qwen3-720p-default", "qwen3_vl", [HD], "video", False, DEFAULT,
     "1280x720 down to the clip's pixel budget"),
    ("qwen3-720p-every-frame-cap", "qwen3_vl", [HD], "video", False,
     {"do_sample_frames": False, "cap_pixels_per_frame": True},
     "cap_pixels_per_frame: 20 frames get 20 x 1.05 x shortest_edge, not longest_edge"),
    ("qwen3-num-frames6", "qwen3_vl", [SMALL_LONG], "video", False,
     {"num_frames": 6, "fps": None}, "num_frames instead of fps"),
    ("qwen3-two-videos", "qwen3_vl", [H264, HEVC], "two-videos", False, DEFAULT,
     "two videos; HEVC"),
    ("qwen3-image-then-video", "qwen3_vl", [H264], "image-video", True, DEFAULT,
     "an image then a video, adjacent"),
    ("qwen3-video-then-image", "qwen3_vl", [SMALL_LONG], "video-image", True, {"fps": 4.0},
     "a video then an image"),
    ("qwen3-vfr-mp4", "qwen3_vl", [VFR_MP4], "video", False, DEFAULT,
     "variable frame rate: HF reads average_rate"),
    ("qwen3-444-odd-bare", "qwen3_vl", [ODD_444], "bare", False, DEFAULT,
     "yuv444p, odd size; a prompt that is the placeholder alone"),
    ("qwen35-image-then-video", "qwen3_5", [H264], "image-video", True, {"fps": 4.0},
     "Qwen3.5's token ids"),
    ("qwen35-rate30-every-frame", "qwen3_5", [RATE30], "video", False, EVERY,
     "Qwen3.5, 40 frames: t 20"),
]  # fmt: skip


def build_tokenizer(model: str) -> Any:
    """A byte-level BPE with Qwen's pre-tokenizer, trained on `CORPUS`, whose special tokens
    carry the model's ids (in the vocabulary and as added tokens)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=420,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    doc = json.loads(tok.to_str())
    for content, i in SPECIAL[model].items():
        doc["model"]["vocab"][content] = i
        doc["added_tokens"].append(
            {
                "id": i,
                "content": content,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        )
    return doc


def write_tokenizer(model: str) -> Path:
    """The model's tokenizer.json (and a tokenizer_config.json naming Qwen2Tokenizer)."""
    d = TOKENIZER_DIRS[model]
    d.mkdir(parents=True, exist_ok=True)
    (d / "tokenizer.json").write_text(json.dumps(build_tokenizer(model), ensure_ascii=False))
    config = {
        "tokenizer_class": "Qwen2Tokenizer",
        "model_max_length": 262144,
        "unk_token": None,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "errors": "replace",
        "split_special_tokens": False,
    }
    (d / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")
    return d


def hf_tokenizer(d: Path) -> Any:
    from transformers import Qwen2Tokenizer

    return Qwen2Tokenizer.from_pretrained(str(d))


def rope(got: Any) -> tuple[list[list[int]], int]:
    """``get_rope_index`` of Qwen3VLModel and Qwen3_5Model (the same answer, asserted) on a
    stub carrying the config it reads (spatial_merge_size 2)."""
    import torch
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5Model
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLModel

    answers = []
    for cls in (Qwen3VLModel, Qwen3_5Model):
        vision = types.SimpleNamespace(spatial_merge_size=MERGE)
        stub = types.SimpleNamespace(config=types.SimpleNamespace(vision_config=vision))
        stub.get_vision_position_ids = functools.partial(cls.get_vision_position_ids, stub)
        kwargs: dict[str, Any] = {
            key: torch.tensor(np.asarray(got[key])) if key in got else None
            for key in ("image_grid_thw", "video_grid_thw")
        }
        pos, delta = cls.get_rope_index(
            stub,
            torch.tensor(np.asarray(got["input_ids"])),
            mm_token_type_ids=torch.tensor(np.asarray(got["mm_token_type_ids"])),
            **kwargs,
        )
        answers.append((pos[:, 0, :].tolist(), int(delta.reshape(-1)[0])))
    assert answers[0] == answers[1], "Qwen3VLModel and Qwen3_5Model disagree"
    return answers[0]


def image_processor() -> Any:
    """Qwen3-VL's preprocessor_config.json: Qwen2VLImageProcessor with patch 16, mean/std 0.5
    and its pixel bounds."""
    from transformers import Qwen2VLImageProcessor

    return Qwen2VLImageProcessor(
        patch_size=16,
        merge_size=2,
        temporal_patch_size=2,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        size={"shortest_edge": 65536, "longest_edge": 16777216},
    )


def timestamps(processor: Any, meta: Any) -> list[str]:
    """The timestamp texts the processor wrote for one video (recomputed from its own
    ``_calculate_timestamps`` on the metadata it returned, to be read in the goldens)."""
    ts = processor._calculate_timestamps(
        np.asarray(meta.frames_indices).tolist(),
        meta.fps if meta.fps is not None else 24,
        processor.video_processor.temporal_patch_size,
    )
    return [f"<{t:.1f} seconds>" for t in ts]


def run_case(case: tuple[Any, ...], toks: dict[str, Any], tmp: Path) -> dict[str, Any]:
    from transformers import Qwen3VLProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    cid, model, recipes, prompt_name, with_image, videos_kwargs, why = case
    tok = toks[model]
    video_processor = Qwen3VLVideoProcessor()
    base.pyav_fetch_videos(video_processor)
    processor = Qwen3VLProcessor(
        image_processor=image_processor(), tokenizer=tok, video_processor=video_processor
    )
    clips, paths = [], []
    for k, recipe in enumerate(recipes):
        r = dict(recipe)
        data = base.make_clip(r.pop("codec"), r.pop("w"), r.pop("h"), r.pop("n"), **r)
        fmt = recipe.get("fmt", "mp4")
        path = tmp / f"{cid}-{k}.{ {'matroska': 'mkv'}.get(fmt, fmt) }"
        path.write_bytes(data)
        paths.append(str(path))
        clips.append(
            {"recipe": recipe, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        )
    prompt = PROMPTS[prompt_name]
    row: dict[str, Any] = {
        "id": cid,
        "why": why,
        "model": model,
        "processor": type(processor).__name__,
        "image_processor": type(processor.image_processor).__name__,
        "video_processor": type(video_processor).__name__,
        "tokenizer": f"fixtures/{TOKENIZER_DIRS[model].name}/tokenizer.json",
        "clips": clips,
        "prompt": prompt,
        "prompt_ids": tok(prompt)["input_ids"],
        "with_image": with_image,
        "videos_kwargs": videos_kwargs,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = processor(
                text=[prompt],
                images=[base.image()] if with_image else None,
                videos=paths,
                return_tensors="np",
                return_metadata=True,
                **videos_kwargs,
            )
        except Exception as e:  # recorded: what HF does with this clip
            frame = traceback.extract_tb(e.__traceback__)[-1]
            row["error"] = {
                "type": type(e).__name__,
                "message": str(e),
                "raised_in": f"{Path(frame.filename).name}:{frame.name}",
            }
            print(cid, "error", row["error"])
            return row
    pv = np.asarray(got["pixel_values_videos"])
    metas = got["video_metadata"]
    ids = np.asarray(got["input_ids"])
    special = SPECIAL[model]
    types_ = np.asarray(got["mm_token_type_ids"])
    derived = np.where(
        ids == special["<|image_pad|>"], 1, np.where(ids == special["<|video_pad|>"], 2, 0)
    )
    assert np.array_equal(types_, derived), cid
    positions, delta = rope(got)
    text = (
        processor.get_text_with_replacements(
            [prompt], [], [processor.replace_video_token(got, k) for k in range(len(paths))]
        )[0][0]
        if not with_image
        else None
    )
    row.update(
        {
            "video_metadata": [base.metadata_row(m) for m in metas],
            "frame_indices": [np.asarray(m.frames_indices).astype(int).tolist() for m in metas],
            "timestamps": [timestamps(processor, m) for m in metas],
            "input_ids": ids[0].tolist(),
            "mm_token_type_ids": "the processor's: 1 at <|image_pad|>, 2 at <|video_pad|>, else 0",
            "pixel_values_videos": {
                "dtype": str(pv.dtype),
                "shape": list(pv.shape),
                "sha256": base.sha256(pv),
            },
            "video_grid_thw": np.asarray(got["video_grid_thw"]).tolist(),
        }
    )
    if text is not None:
        assert tok(text)["input_ids"] == row["input_ids"], cid
    if with_image:
        px = np.asarray(got["pixel_values"])
        row["pixel_values"] = {
            "dtype": str(px.dtype),
            "shape": list(px.shape),
            "sha256": base.sha256(px),
        }
        row["image_grid_thw"] = np.asarray(got["image_grid_thw"]).tolist()
    row["positions"] = positions
    row["delta"] = delta
    print(cid, row["video_grid_thw"], row["frame_indices"], row["timestamps"], delta)
    return row


def main() -> None:
    import av
    import tokenizers
    import torch
    import torchvision
    import transformers
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(1)
    toks = {model: hf_tokenizer(write_tokenizer(model)) for model in TOKENIZER_DIRS}
    for model, tok in toks.items():  # the special tokens are single tokens
        for content, i in SPECIAL[model].items():
            assert tok(content)["input_ids"] == [i], (model, content)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run_case(case, toks, Path(tmp)) for case in CASES]
    doc = {
        "generator": GENERATOR,
        "reference": (
            "Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(patch_size=16, mean/std 0.5, "
            "size 65536..16777216), tokenizer=Qwen2Tokenizer.from_pretrained(<fixtures "
            "tokenizer dir>), video_processor=Qwen3VLVideoProcessor()) on clip paths; "
            "get_rope_index of Qwen3VLModel and Qwen3_5Model"
        ),
        "call": (
            "processor(text=[prompt], images=[image] if with_image else None, "
            "videos=[str(path), ...], return_tensors='np', return_metadata=True, "
            "**videos_kwargs)"
        ),
        "video_loading": (
            "the video processor's fetch_videos is HF's own with backend='pyav' "
            "(gen_video_request_goldens.pyav_fetch_videos)"
        ),
        "layout": (
            "transformers 5.23 replaces only <|video_pad|> (get_text_with_replacements), so the "
            "prompt's own <|vision_start|> and <|vision_end|> stay around the expansion"
        ),
        "cap_pixels_per_frame": "unset (the 5.23 default, which means False) unless a case sets it",
        "spatial_merge_size": MERGE,
        "tokenizers_files": {
            m: {
                "path": f"fixtures/{d.name}/tokenizer.json",
                "sha256": hashlib.sha256((d / "tokenizer.json").read_bytes()).hexdigest(),
            }
            for m, d in TOKENIZER_DIRS.items()
        },
        "image": {"recipe": base.IMAGE_RECIPE, "passed_as": "numpy uint8 HWC array"},
        "tensor_hash": "sha256 of the float32 C-contiguous bytes",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "av": av.__version__,
        "numpy": np.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "qwen_vl_utils_skipped": (
            "qwen-vl-utils 0.0.14 reads a path with torchcodec, decord or torchvision < 0.26 "
            "(read_video); this venv has none of them"
        ),
        "cases": rows,
    }
    out = OUT
    base.OUT = out
    base.write(doc)
    print(f"{len(rows)} cases, {out.stat().st_size} bytes -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
