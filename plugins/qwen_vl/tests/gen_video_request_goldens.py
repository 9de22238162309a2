"""Goldens of transformers' Qwen2-VL and Qwen2.5-VL *processors* on real clips, end to end, for
the pipeline's video requests: each clip is made by `sglang_mm_core.conformance.video.make_clip`
(its recipe and its bytes' SHA-256 recorded), written to a file, and the file's path handed to
``Qwen2VLProcessor`` / ``Qwen2_5_VLProcessor`` the way a user does::

    processor(text=[prompt], images=[image] or None, videos=[str(path), ...],
              return_tensors="np", return_metadata=True, **videos_kwargs)

so HF itself reads the clip (``load_video``, PyAV: see `pyav_fetch_videos`), samples its frames
(``Qwen2VLVideoProcessor.sample_frames`` where ``do_sample_frames``), resizes and patchifies them
(torchvision), expands the placeholders and tokenizes (a tokenizer built locally with Qwen's
special-token ids); the positions are the model classes' ``get_rope_index`` on the processor's
outputs. Big tensors are kept as the SHA-256 of their float32 C-order bytes and their shape.

Runs in a venv with torch, torchvision, transformers and PyAV (not CI); writes
fixtures/video_request_goldens.json with every version::

    /work/torchvenv/bin/python plugins/qwen_vl/tests/gen_video_request_goldens.py

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
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "fixtures" / "video_request_goldens.json"
GENERATOR = "plugins/qwen_vl/tests/gen_video_request_goldens.py"
TOKENS_PER_SECOND = 2  # Qwen2.5-VL's vision_config.tokens_per_second
MERGE = 2


def _load_clips() -> Any:
    path = ROOT / "sglang_mm_core" / "conformance" / "video.py"
    spec = importlib.util.spec_from_file_location("_conformance_video", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


clips = _load_clips()
make_clip = clips.make_clip
#: HF's own ``fetch_videos`` with ``backend="pyav"`` (``read_video_pyav``): transformers 5.23's
#: ``BaseVideoProcessor.fetch_videos`` picks ``backend = "torchcodec"``, falling back to
#: ``"torchvision"`` only where torchvision still has ``read_video`` (< 0.26), and no keyword
#: chooses the backend; every path goes to ``load_video(path, backend="pyav",
#: sample_indices_fn=...)``, with the processor's ``sample_frames`` when ``do_sample_frames``.
pyav_fetch_videos = clips.hf_reads_with_pyav

V = "<|vision_start|><|video_pad|><|vision_end|>"
I = "<|vision_start|><|image_pad|><|vision_end|>"  # noqa: E741
PROMPTS = {
    "video": f"hello {V} world",
    "two-videos": f"two {V} photos {V} world",
    "image-video": f"hello {I} two {V} world",
    "video-image": f"hello {V} two {I} world",
}
#: The image of the mixed prompts, passed as a numpy uint8 HWC array.
IMAGE_RECIPE = "np.random.default_rng(7).integers(0, 256, (150, 200, 3), dtype=np.uint8)"


def image() -> np.ndarray:
    return np.random.default_rng(7).integers(0, 256, (150, 200, 3), dtype=np.uint8)


H264 = {"codec": "libx264", "w": 64, "h": 48, "n": 30}
HEVC = {"codec": "libx265", "w": 64, "h": 48, "n": 12}
ODD_444 = {"codec": "libx264", "w": 33, "h": 17, "n": 11, "pix_fmt": "yuv444p"}
MPEG4 = {"codec": "mpeg4", "w": 40, "h": 30, "n": 3}
ONE = {"codec": "libx264", "w": 32, "h": 32, "n": 1}
HD = {"codec": "libx264", "w": 1280, "h": 720, "n": 20, "rate": 10}
VP9_MP4 = {"codec": "libvpx-vp9", "w": 48, "h": 32, "n": 10}
VP9_WEBM = {"codec": "libvpx-vp9", "w": 48, "h": 32, "n": 10, "fmt": "webm"}
SMALL_LONG = {"codec": "libx264", "w": 56, "h": 56, "n": 60}
RATE30 = {"codec": "libx264", "w": 64, "h": 48, "n": 40, "rate": 30}
VFR_MP4 = {"codec": "libx264", "w": 32, "h": 32, "n": 9, "vfr": True}
VFR_MKV = {"codec": "libx264", "w": 32, "h": 32, "n": 9, "vfr": True, "fmt": "matroska"}
FPS2 = {"do_sample_frames": True, "fps": 2.0}
EVERY = {"do_sample_frames": False}

#: (id, generation, clip recipes, prompt, with the image, videos_kwargs, why)
CASES: list[tuple[str, str, list[dict[str, Any]], str, bool, dict[str, Any], str]] = [
    ("qwen2-h264-every-frame", "qwen2_vl", [H264], "video", False, EVERY,
     "every frame (Qwen2-VL's default); grid t 15 > max(20, 28) / 2 = 14"),
    ("qwen2-h264-fps2", "qwen2_vl", [H264], "video", False, FPS2, "fps sampling, min_frames 4"),
    ("qwen2-444-odd-num-frames4", "qwen2_vl", [ODD_444], "video", False,
     {"do_sample_frames": True, "num_frames": 4}, "yuv444p, odd size upscaled to min pixels"),
    ("qwen2-mpeg4-3-frames", "qwen2_vl", [MPEG4], "video", False, EVERY,
     "an odd frame count: the last frame repeated to fill the temporal patch"),
    ("qwen2-one-frame", "qwen2_vl", [ONE], "video", False, EVERY, "one frame, repeated"),
    ("qwen2-two-videos-h264-hevc", "qwen2_vl", [H264, HEVC], "two-videos", False,
     {"do_sample_frames": True, "fps": 2.0, "min_frames": 2}, "two videos in one prompt"),
    ("qwen2-image-then-video", "qwen2_vl", [H264], "image-video", True, FPS2, "image then video"),
    ("qwen2-small-long-t-past-hw", "qwen2_vl", [SMALL_LONG], "video", False,
     {"do_sample_frames": False, "size": {"shortest_edge": 3136, "longest_edge": 3136}},
     "grid 30 x 4 x 4: t far past max(h, w) / 2 = 2"),
    ("qwen25-h264-fps2", "qwen2_5_vl", [H264], "video", False, FPS2, "second_per_grid_ts 0.6"),
    ("qwen25-video-then-image", "qwen2_5_vl", [H264], "video-image", True, FPS2,
     "video then image"),
    ("qwen25-rate30-fps1-min2", "qwen2_5_vl", [RATE30], "video", False,
     {"do_sample_frames": True, "fps": 1.0, "min_frames": 2},
     "a fractional second_per_grid_ts (2 / 1.5)"),
    ("qwen25-720p-20-frames-rate10-fps2", "qwen2_5_vl", [HD], "video", False, FPS2,
     "1280x720 down to max pixels"),
    ("qwen25-hevc-every-frame", "qwen2_5_vl", [HEVC], "video", False, EVERY,
     "HEVC; every frame with the container's rate"),
    ("qwen25-vp9-mp4-num-frames4", "qwen2_5_vl", [VP9_MP4], "video", False,
     {"do_sample_frames": True, "num_frames": 4}, "VP9 in MP4"),
    ("qwen25-vfr-mp4-fps2", "qwen2_5_vl", [VFR_MP4], "video", False, FPS2,
     "variable frame rate in MP4: HF reads average_rate"),
    ("qwen25-vp9-webm-every-frame", "qwen2_5_vl", [VP9_WEBM], "video", False, EVERY,
     "WebM states no frame count"),
    ("qwen25-vfr-mkv-every-frame", "qwen2_5_vl", [VFR_MKV], "video", False, EVERY,
     "Matroska states no frame count"),
    ("qwen25-vfr-mkv-fps2", "qwen2_5_vl", [VFR_MKV], "video", False, FPS2,
     "Matroska states no frame count"),
]  # fmt: skip

QWEN_VL_UTILS_SKIPPED = (
    "qwen-vl-utils 0.0.14 reads a video path with torchcodec, decord or torchvision "
    "(_read_video_torchvision calls torchvision.io.read_video, the PyAV one); torchvision 0.26 "
    "removed torchvision.io.read_video (0.29 here has none) and no reader of qwen-vl-utils uses "
    "PyAV, so it cannot read these clips through PyAV"
)


def sha256(a: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float32).tobytes()).hexdigest()


def tokenizer() -> Any:
    """As ``_tokenizer()`` of test_qwen_transformers.py: a WordLevel vocabulary with Qwen's
    special-token ids."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    special = {
        "<|vision_start|>": 151652,
        "<|vision_end|>": 151653,
        "<|image_pad|>": 151655,
        "<|video_pad|>": 151656,
    }
    vocab = {w: i for i, w in enumerate(["<unk>", "hello", "world", "two", "photos"])}
    vocab.update(special)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"<\|[a-z_]+\|>| |[^\s<]+"), behavior="isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<unk>",
        additional_special_tokens=list(special),
    )


def rope(generation: str, got: Any) -> tuple[list[list[int]], int]:
    """``get_rope_index`` of Qwen2VLModel / Qwen2_5_VLModel on a stub carrying the config it
    reads (spatial_merge_size 2, tokens_per_second 2), fed the processor's outputs as torch
    tensors (``second_per_grid_ts`` as ``return_tensors="pt"`` gives it: float32)."""
    import torch
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel

    cls = Qwen2_5_VLModel if generation == "qwen2_5_vl" else Qwen2VLModel
    vision = types.SimpleNamespace(spatial_merge_size=MERGE, tokens_per_second=TOKENS_PER_SECOND)
    stub = types.SimpleNamespace(config=types.SimpleNamespace(vision_config=vision))
    stub.get_vision_position_ids = functools.partial(cls.get_vision_position_ids, stub)
    kwargs: dict[str, Any] = {
        key: torch.tensor(np.asarray(got[key])) if key in got else None
        for key in ("image_grid_thw", "video_grid_thw")
    }
    if generation == "qwen2_5_vl":
        kwargs["second_per_grid_ts"] = torch.tensor(np.asarray(got["second_per_grid_ts"]).tolist())
    pos, delta = cls.get_rope_index(
        stub,
        torch.tensor(np.asarray(got["input_ids"])),
        mm_token_type_ids=torch.tensor(np.asarray(got["mm_token_type_ids"])),
        **kwargs,
    )
    return pos[:, 0, :].tolist(), int(delta.reshape(-1)[0])


def metadata_row(meta: Any) -> dict[str, Any]:
    return {
        "total_num_frames": int(meta.total_num_frames),
        "fps": float(meta.fps) if meta.fps is not None else None,
        "duration": float(meta.duration) if meta.duration is not None else None,
        "width": meta.width,
        "height": meta.height,
        "video_backend": meta.video_backend,
        "sampled_fps": float(meta.sampled_fps),
    }


def run_case(case: tuple[Any, ...], tok: Any, tmp: Path) -> dict[str, Any]:
    from transformers import (
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    cid, generation, recipes, prompt_name, with_image, videos_kwargs, why = case
    cls = Qwen2_5_VLProcessor if generation == "qwen2_5_vl" else Qwen2VLProcessor
    video_processor = Qwen2VLVideoProcessor()
    pyav_fetch_videos(video_processor)
    image_processor = Qwen2VLImageProcessor()
    processor = cls(image_processor=image_processor, tokenizer=tok, video_processor=video_processor)
    clips, paths = [], []
    for k, recipe in enumerate(recipes):
        r = dict(recipe)
        data = make_clip(r.pop("codec"), r.pop("w"), r.pop("h"), r.pop("n"), **r)
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
        "generation": generation,
        "processor": cls.__name__,
        "image_processor": type(image_processor).__name__,
        "video_processor": type(video_processor).__name__,
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
                images=[image()] if with_image else None,
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
    types_ = np.asarray(got["mm_token_type_ids"])
    derived = np.where(ids == 151655, 1, np.where(ids == 151656, 2, 0))
    assert np.array_equal(types_, derived), cid
    positions, delta = rope(generation, got)
    row.update(
        {
            "video_metadata": [metadata_row(m) for m in metas],
            "frame_indices": [np.asarray(m.frames_indices).astype(int).tolist() for m in metas],
            "input_ids": ids[0].tolist(),
            "mm_token_type_ids": "the processor's: 1 at <|image_pad|>, 2 at <|video_pad|>, else 0",
            "pixel_values_videos": {
                "dtype": str(pv.dtype),
                "shape": list(pv.shape),
                "sha256": sha256(pv),
            },
            "video_grid_thw": np.asarray(got["video_grid_thw"]).tolist(),
        }
    )
    if generation == "qwen2_5_vl":
        s = np.asarray(got["second_per_grid_ts"])
        row["second_per_grid_ts"] = {
            "values": [float(x) for x in s.tolist()],
            "processor_dtype": str(s.dtype),
            "float32_hex": np.asarray(s.tolist(), dtype="<f4").tobytes().hex(),
        }
    if with_image:
        px = np.asarray(got["pixel_values"])
        row["pixel_values"] = {
            "dtype": str(px.dtype),
            "shape": list(px.shape),
            "sha256": sha256(px),
        }
        row["image_grid_thw"] = np.asarray(got["image_grid_thw"]).tolist()
    row["positions"] = positions
    row["delta"] = delta
    print(cid, row["video_grid_thw"], row["frame_indices"], len(row["input_ids"]), delta)
    return row


def write(doc: dict[str, Any]) -> None:
    """Indented at the top, one line per case (positions are long)."""
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
    tok = tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run_case(case, tok, Path(tmp)) for case in CASES]
    doc = {
        "generator": GENERATOR,
        "reference": (
            "Qwen2VLProcessor / Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(), "
            "tokenizer=<local WordLevel>, video_processor=Qwen2VLVideoProcessor()) on clip "
            "paths; get_rope_index of Qwen2VLModel / Qwen2_5_VLModel"
        ),
        "call": (
            "processor(text=[prompt], images=[image] if with_image else None, "
            "videos=[str(path), ...], return_tensors='np', return_metadata=True, "
            "**videos_kwargs)"
        ),
        "video_loading": (
            "the video processor's fetch_videos is HF's own with backend='pyav': "
            "transformers.video_utils.load_video(path, backend='pyav', sample_indices_fn=...) "
            "(read_video_pyav: total_num_frames = stream.frames, fps = stream.average_rate); "
            "5.23 hard-codes torchcodec (or torchvision < 0.26) there, no keyword selects it"
        ),
        "cap_pixels_per_frame": "unset (the 5.23 default, which means False)",
        "tokens_per_second": TOKENS_PER_SECOND,
        "spatial_merge_size": MERGE,
        "image": {"recipe": IMAGE_RECIPE, "passed_as": "numpy uint8 HWC array"},
        "tensor_hash": "sha256 of the float32 C-contiguous bytes",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "av": av.__version__,
        "numpy": np.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "qwen_vl_utils_skipped": QWEN_VL_UTILS_SKIPPED,
        "qwen_vl_utils_cases": [],
        "cases": rows,
    }
    write(doc)
    print(f"{len(rows)} cases, {OUT.stat().st_size} bytes -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
