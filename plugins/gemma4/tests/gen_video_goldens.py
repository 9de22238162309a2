"""Goldens of transformers' ``Gemma4Processor`` with its ``Gemma4VideoProcessor`` (torchvision, CPU)
on real clips, end to end, for the pipeline's Gemma 4 video requests. Each clip is made by
`sglang_mm_core.conformance.video.make_clip` (recipe and bytes' SHA-256 recorded), written to a
file, and the path handed to the processor the way a user does::

    processor(text=[prompt], images=[[image]] or None, videos=[str(path), ...],
              return_tensors="np", return_metadata=True, add_special_tokens=False,
              **videos_kwargs)

so HF itself reads the clip (``load_video`` through PyAV, as
``conformance.video.hf_reads_with_pyav`` makes it read), samples its
frames (``default_sample_indices_fn``), resizes each to the patch budget (torchvision's uint8
bicubic), rescales, normalizes, patchifies and pads them, writes every frame's ``mm:ss``
timestamp around the soft tokens and tokenizes the whole prompt. The tokenizer is a BPE built
here with Gemma 4's special-token ids and merges across digits, ``:`` and the space marker
(``build_tokenizer()``), saved to ``fixtures/gemma4_tokenizer/tokenizer.json`` for the tests to
load as the spec's ``tokenizer``. Big tensors are kept as the SHA-256 of their C-order bytes
(float32 or int64) and their shape.

Runs in a venv with torch, torchvision, transformers and PyAV (not CI); writes
``fixtures/video_goldens.json`` with every version::

    /path/to/torchenv/bin/python plugins/gemma4/tests/gen_video_goldens.py

The torch venv needs no sglang-mm: ``conformance/video.py`` needs only numpy and PyAV, so it is
loaded from its file."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import platform
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "fixtures" / "video_goldens.json"
TOKENIZER_DIR = HERE / "fixtures" / "gemma4_tokenizer"
GENERATOR = "plugins/gemma4/tests/gen_video_goldens.py"


def _load_clips() -> Any:
    path = ROOT / "sglang_mm_core" / "conformance" / "video.py"
    spec = importlib.util.spec_from_file_location("_conformance_video", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


clips = _load_clips()

# Gemma 4's ids (config.json's and the tokenizer's).
SPECIAL = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<boi>": 255999, "<eoi>": 258882}
SPECIAL |= {"<|image|>": 258880, "<|video|>": 258884, "<|audio|>": 258881}
SPECIAL |= {"<boa>": 256000, "<eoa>": 258883}
NAMES = {"boi_token": "<boi>", "eoi_token": "<eoi>", "image_token": "<|image|>"}
NAMES |= {"audio_token": "<|audio|>", "boa_token": "<boa>", "eoa_token": "<eoa>"}

V, I = "<|video|>", "<|image|>"  # noqa: E741
PROMPTS = {
    "video": f"<bos>{V}\nDescribe this video.",
    "two-videos": f"<bos>Compare{V} and{V}\nwhat changed?",
    "image-video": f"<bos>{I} and {V}\nDescribe these.",
}

H264_30 = {"codec": "libx264", "w": 64, "h": 48, "n": 30}
H264_40 = {"codec": "libx264", "w": 64, "h": 48, "n": 40}
SLOW_70 = {"codec": "libx264", "w": 32, "h": 32, "n": 70, "rate": 1}
ODD_444 = {"codec": "libx264", "w": 33, "h": 17, "n": 11, "pix_fmt": "yuv444p"}
HD = {"codec": "libx264", "w": 1280, "h": 720, "n": 20, "rate": 10}
HEVC = {"codec": "libx265", "w": 64, "h": 48, "n": 12}
GRID = {"codec": "libx264", "w": 432, "h": 336, "n": 3}
VFR = {"codec": "libx264", "w": 32, "h": 32, "n": 9, "vfr": True}
RATE30 = {"codec": "libx264", "w": 96, "h": 54, "n": 45, "rate": 30}

#: (id, clip recipes, prompt, with the image, videos_kwargs, why)
CASES: list[tuple[str, list[dict[str, Any]], str, bool, dict[str, Any], str]] = [
    ("default-32-of-40", [H264_40], "video", False, {},
     "the defaults: 32 of 40 frames at 25 fps, 70 soft tokens each"),
    ("default-32-of-30", [H264_30], "video", False, {},
     "32 frames asked of a 30-frame clip: HF's ValueError"),
    ("nframes-8", [H264_30], "video", False, {"num_frames": 8}, "num_frames 8 of 30"),
    ("past-a-minute", [SLOW_70], "video", False, {"num_frames": 12},
     "1 fps, 70 frames: timestamps past 01:00"),
    ("odd-444-upscaled", [ODD_444], "video", False, {"num_frames": 4},
     "yuv444p 33x17 upscaled to the budget"),
    ("hd-20-frames", [HD], "video", False, {"num_frames": 20},
     "1280x720 down to 70 soft tokens"),
    ("every-frame-280", [HEVC], "video", False,
     {"do_sample_frames": False, "max_soft_tokens": 280},
     "HEVC, every frame, 280 soft tokens"),
    ("on-the-grid", [GRID], "video", False, {"num_frames": 3},
     "432x336 is the 70-token size itself: no resize"),
    ("no-normalize", [H264_30], "video", False, {"num_frames": 5, "do_normalize": False},
     "normalize off: the rescale alone, in float32"),
    ("vfr-mp4", [VFR], "video", False, {"num_frames": 5}, "variable frame rate: average_rate"),
    ("rate30-two-videos", [RATE30, H264_30], "two-videos", False, {"num_frames": 6},
     "two videos, one at 30 fps (timestamps at 0.2 s steps)"),
    ("image-and-video", [H264_40], "image-video", True, {"num_frames": 4},
     "an image (PIL backend) and a video in one prompt"),
]  # fmt: skip


def image() -> np.ndarray:
    return np.random.default_rng(7).integers(0, 256, (150, 200, 3), dtype=np.uint8)


IMAGE_RECIPE = "np.random.default_rng(7).integers(0, 256, (150, 200, 3), dtype=np.uint8)"


def build_tokenizer() -> Any:
    """A BPE tokenizer.json: trained on timestamps and the prompts' words (so it merges across
    digits, ``:`` and ``▁``), Gemma's space-to-``▁`` normalizer and no pre-tokenizer, and
    Gemma 4's special tokens at their real ids."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.decoder = decoders.Replace("▁", " ")
    corpus = [f"{m:02d}:{s:02d} " for m in range(3) for s in range(60)]
    corpus += [" 00:01 00:02 ", "Describe this video.", "Compare and\nwhat changed?"]
    corpus += ["Describe these.", " and "]
    trainer = trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>"], show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    doc = json.loads(tok.to_str())
    # The trained pieces after <pad>, <eos> and <bos> (ids 0-2), the rest at Gemma 4's ids.
    doc["model"]["vocab"] = {t: i + 3 for t, i in doc["model"]["vocab"].items()}
    doc["added_tokens"] = []
    for token, ident in SPECIAL.items():
        doc["model"]["vocab"][token] = ident
    tok = Tokenizer.from_str(json.dumps(doc))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    for token, ident in SPECIAL.items():
        assert tok.token_to_id(token) == ident, token
    return tok


def hf_tokenizer(path: Path) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_file=str(path),
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens=NAMES,
    )


def sha(a: Any, dtype: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=dtype).tobytes()).hexdigest()


def processor(tok: Any) -> Any:
    from transformers import Gemma4VideoProcessor
    from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor
    from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil
    from transformers.models.gemma4.processing_gemma4 import Gemma4Processor

    video = Gemma4VideoProcessor()
    clips.hf_reads_with_pyav(video)
    return Gemma4Processor(Gemma4AudioFeatureExtractor(), Gemma4ImageProcessorPil(), tok, video)


def run_case(case: tuple[Any, ...], tok: Any, tmp: Path) -> dict[str, Any]:
    cid, recipes, prompt_name, with_image, videos_kwargs, why = case
    proc = processor(tok)
    records, paths = [], []
    for k, recipe in enumerate(recipes):
        data, record = clips.clip_record(recipe)
        path = tmp / f"{cid}-{k}.mp4"
        path.write_bytes(data)
        paths.append(str(path))
        records.append(record)
    prompt = PROMPTS[prompt_name]
    row: dict[str, Any] = {
        "id": cid,
        "why": why,
        "clips": records,
        "prompt": prompt,
        "prompt_ids": tok(prompt, add_special_tokens=False)["input_ids"],
        "with_image": with_image,
        "videos_kwargs": videos_kwargs,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = proc(
                text=[prompt],
                images=[[image()]] if with_image else None,
                videos=paths,
                return_tensors="np",
                return_metadata=True,
                add_special_tokens=False,
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
    ids = np.asarray(got["input_ids"])[0]
    types_ = np.asarray(got["mm_token_type_ids"])[0]
    derived = np.where(ids == SPECIAL[I], 1, np.where(ids == SPECIAL[V], 2, 0))
    assert np.array_equal(types_, derived), cid
    pv = np.asarray(got["pixel_values_videos"])
    pos = np.asarray(got["video_position_ids"])
    metas = got["video_metadata"]
    row.update(
        {
            "input_ids": ids.tolist(),
            "mm_token_type_ids": "the processor's: 1 at <|image|>, 2 at <|video|>, else 0",
            "frame_indices": [np.asarray(m.frames_indices).astype(int).tolist() for m in metas],
            "fps": [float(m.fps) for m in metas],
            "pixel_values_videos": {
                "dtype": str(pv.dtype),
                "shape": list(pv.shape),
                "sha256": sha(pv, np.float32),
            },
            "video_position_ids": {
                "dtype": str(pos.dtype),
                "shape": list(pos.shape),
                "sha256": sha(pos, np.int64),
            },
            "num_frames_per_video": np.asarray(got["num_frames_per_video"]).tolist(),
        }
    )
    if with_image:
        px = np.asarray(got["pixel_values"])
        row["pixel_values"] = {
            "dtype": str(px.dtype),
            "shape": list(px.shape),
            "sha256": sha(px, np.float32),
        }
    print(cid, row["frame_indices"], pv.shape, len(row["input_ids"]))
    return row


def write(doc: dict[str, Any]) -> None:
    """Indented at the top, one line per case."""
    compact = functools.partial(json.dumps, separators=(",", ":"))
    head = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items() if k != "cases"]
    cases = ",\n".join(f"  {compact(c)}" for c in doc["cases"])
    OUT.write_text("{\n" + ",\n".join(head) + ',\n "cases": [\n' + cases + "\n ]\n}\n")
    json.loads(OUT.read_text())


def main() -> None:
    import av
    import tokenizers
    import torch
    import torchvision
    import transformers
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(1)
    TOKENIZER_DIR.mkdir(parents=True, exist_ok=True)
    path = TOKENIZER_DIR / "tokenizer.json"
    build_tokenizer().save(str(path))
    tok = hf_tokenizer(path)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run_case(case, tok, Path(tmp)) for case in CASES]
    doc = {
        "generator": GENERATOR,
        "reference": (
            "Gemma4Processor(Gemma4AudioFeatureExtractor(), Gemma4ImageProcessorPil(), "
            "<local BPE tokenizer, fixtures/gemma4_tokenizer>, Gemma4VideoProcessor()) on clip "
            "paths"
        ),
        "call": (
            "processor(text=[prompt], images=[[image]] if with_image else None, "
            "videos=[str(path), ...], return_tensors='np', return_metadata=True, "
            "add_special_tokens=False, "
            "**videos_kwargs)"
        ),
        "video_loading": (
            "the video processor's fetch_videos is HF's own with backend='pyav': "
            "transformers.video_utils.load_video(path, backend='pyav', sample_indices_fn=...) "
            "(read_video_pyav: total_num_frames = stream.frames, fps = stream.average_rate); "
            "5.23 hard-codes torchcodec (or torchvision < 0.26) there, no keyword selects it"
        ),
        "image": {"recipe": IMAGE_RECIPE, "passed_as": "numpy uint8 HWC array"},
        "tensor_hash": "sha256 of the C-contiguous bytes (float32 pixels, int64 positions)",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "av": av.__version__,
        "numpy": np.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cases": rows,
    }
    write(doc)
    print(f"{len(rows)} cases, {OUT.stat().st_size} bytes -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
