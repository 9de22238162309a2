"""Goldens of qwen-vl-utils' ``fetch_video`` through its PyAV reader, then transformers'
Qwen2-VL / Qwen2.5-VL processors, end to end, for the `qwen_vl_utils` sampling mode: each clip
is made by `make_clip` (recipe and SHA-256 recorded), written to a file and read the way
qwen-vl-utils' README has a user do it::

    images, pairs, video_kwargs = process_vision_info(
        messages, return_video_kwargs=True, return_video_metadata=True)
    videos, metadata = zip(*pairs)
    processor(text=[prompt], images=images, videos=videos, video_metadata=metadata,
              return_tensors="np", **video_kwargs)   # video_kwargs: do_sample_frames=False

with ``FORCE_QWENVL_VIDEO_READER=torchvision``: qwen-vl-utils 0.0.14's ``_read_video_torchvision``
calls ``torchvision.io.read_video``, which decodes with PyAV. torchvision 0.26 removed
``read_video``, so this runs in a venv with torchvision 0.25 (and its torch, 2.10), not the
torch venv of the other goldens::

    python3 -m venv /work/qvuvenv
    /work/qvuvenv/bin/pip install "torch==2.10.*" "torchvision==0.25.*" qwen-vl-utils==0.0.14 \\
        av==18.1.0 transformers==5.23.0 numpy==2.4.6 pillow==13.0.0 tokenizers
    /work/qvuvenv/bin/python plugins/qwen_vl/tests/gen_video_qvu_goldens.py

Writes fixtures/video_qvu_goldens.json with every version. The tokenizer, the positions
(``get_rope_index``) and the hashing are those of ``gen_video_request_goldens.py``."""

from __future__ import annotations

import os

os.environ["FORCE_QWENVL_VIDEO_READER"] = "torchvision"  # read when qwen_vl_utils is imported

import hashlib
import platform
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen_video_request_goldens as base  # noqa: E402

OUT = HERE / "fixtures" / "video_qvu_goldens.json"
GENERATOR = "plugins/qwen_vl/tests/gen_video_qvu_goldens.py"

H264, HEVC, HD, RATE30 = base.H264, base.HEVC, base.HD, base.RATE30
VP9_WEBM, MPEG4, ODD_444 = base.VP9_WEBM, base.MPEG4, base.ODD_444
LONG = {"codec": "libx264", "w": 96, "h": 64, "n": 75}

#: (id, generation, [(clip recipe, options)], prompt, with the image, why)
CASES: list[tuple[str, str, list[tuple[dict[str, Any], dict[str, Any]]], str, bool, str]] = [
    ("qwen2-h264-defaults", "qwen2_vl", [(H264, {})], "video", False,
     "qwen-vl-utils' defaults: FPS 2, FPS_MIN_FRAMES 4"),
    ("qwen25-h264-defaults", "qwen2_5_vl", [(H264, {})], "video", False,
     "second_per_grid_ts from the sample fps"),
    ("qwen25-rate30-fps1", "qwen2_5_vl", [(RATE30, {"fps": 1.0})], "video", False,
     "fps option: rounded to FRAME_FACTOR, at least FPS_MIN_FRAMES"),
    ("qwen25-long-nframes6", "qwen2_5_vl", [(LONG, {"nframes": 6})], "video", False,
     "nframes option: rounded linspace indices"),
    ("qwen2-long-fps-min-max", "qwen2_vl", [(LONG, {"fps": 4.0, "max_frames": 8})], "video",
     False, "max_frames caps fps sampling"),
    ("qwen25-720p-defaults", "qwen2_5_vl", [(HD, {})], "video", False,
     "1280x720 down to VIDEO_MAX_PIXELS"),
    ("qwen25-720p-total-pixels", "qwen2_5_vl", [(HD, {"total_pixels": 6 * 128 * 28 * 28})],
     "video", False, "the total-pixel share per frame"),
    ("qwen25-720p-max-pixels", "qwen2_5_vl", [(HD, {"max_pixels": 200 * 28 * 28})], "video",
     False, "a max_pixels option under the limit"),
    ("qwen2-long-resized", "qwen2_vl", [(LONG, {"resized_height": 100, "resized_width": 150})],
     "video", False, "resized_height / resized_width, rounded by smart_resize"),
    ("qwen25-long-start-end", "qwen2_5_vl", [(LONG, {"video_start": 0.5, "video_end": 2.0})],
     "video", False, "a time range"),
    ("qwen2-444-odd", "qwen2_vl", [(ODD_444, {})], "video", False,
     "yuv444p, odd size, upscaled to VIDEO_MIN_PIXELS"),
    ("qwen25-hevc", "qwen2_5_vl", [(HEVC, {})], "video", False, "HEVC"),
    ("qwen25-vp9-webm", "qwen2_5_vl", [(VP9_WEBM, {})], "video", False,
     "WebM states no frame count: the reader counts decoded frames"),
    ("qwen25-two-videos", "qwen2_5_vl", [(H264, {}), (HEVC, {"fps": 1.0})], "two-videos", False,
     "two videos, each with its own options"),
    ("qwen25-image-then-video", "qwen2_5_vl", [(H264, {})], "image-video", True,
     "an image (fetch_image) then a video"),
    ("qwen2-mpeg4-3-frames", "qwen2_vl", [(MPEG4, {})], "video", False,
     "3 frames: fewer than FPS_MIN_FRAMES"),
]  # fmt: skip


def run_case(case: tuple[Any, ...], tok: Any, tmp: Path) -> dict[str, Any]:
    from PIL import Image
    from qwen_vl_utils import process_vision_info
    from transformers import (
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    cid, generation, videos, prompt_name, with_image, why = case
    cls = Qwen2_5_VLProcessor if generation == "qwen2_5_vl" else Qwen2VLProcessor
    processor = cls(
        image_processor=Qwen2VLImageProcessor(),
        tokenizer=tok,
        video_processor=Qwen2VLVideoProcessor(),
    )
    clips, content = [], []
    if with_image:
        content.append({"type": "image", "image": Image.fromarray(base.image())})
    for k, (recipe, options) in enumerate(videos):
        r = dict(recipe)
        data = base.make_clip(r.pop("codec"), r.pop("w"), r.pop("h"), r.pop("n"), **r)
        fmt = recipe.get("fmt", "mp4")
        path = tmp / f"{cid}-{k}.{ {'matroska': 'mkv'}.get(fmt, fmt) }"
        path.write_bytes(data)
        clips.append(
            {
                "recipe": recipe,
                "options": options,
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
            }
        )
        content.append({"type": "video", "video": str(path), **options})
    prompt = base.PROMPTS[prompt_name]
    row: dict[str, Any] = {
        "id": cid,
        "why": why,
        "generation": generation,
        "processor": cls.__name__,
        "clips": clips,
        "prompt": prompt,
        "prompt_ids": tok(prompt)["input_ids"],
        "with_image": with_image,
    }
    messages = [{"role": "user", "content": content}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            images, pairs, video_kwargs = process_vision_info(
                messages, return_video_kwargs=True, return_video_metadata=True
            )
            vids, metas = [v for v, _ in pairs], [m for _, m in pairs]
            got = processor(
                text=[prompt],
                images=images,
                videos=vids,
                video_metadata=metas,
                return_tensors="np",
                **video_kwargs,
            )
        except Exception as e:  # recorded: what the references do with this clip
            frame = traceback.extract_tb(e.__traceback__)[-1]
            row["error"] = {
                "type": type(e).__name__,
                "message": str(e),
                "raised_in": f"{Path(frame.filename).name}:{frame.name}",
            }
            print(cid, "error", row["error"])
            return row
    pv = np.asarray(got["pixel_values_videos"])
    ids = np.asarray(got["input_ids"])
    positions, delta = base.rope(generation, got)
    row.update(
        {
            "video_kwargs": dict(video_kwargs),
            "frame_indices": [np.asarray(m["frames_indices"]).tolist() for m in metas],
            "video_metadata": [
                {"fps": float(m["fps"]), "total_num_frames": int(m["total_num_frames"])}
                for m in metas
            ],
            "qvu_frames": [list(v.shape) for v in vids],
            "input_ids": ids[0].tolist(),
            "pixel_values_videos": {
                "dtype": str(pv.dtype),
                "shape": list(pv.shape),
                "sha256": base.sha256(pv),
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
        row["pixel_values"] = {"dtype": str(px.dtype), "shape": list(px.shape)}
        row["pixel_values"]["sha256"] = base.sha256(px)
        row["image_grid_thw"] = np.asarray(got["image_grid_thw"]).tolist()
    row["positions"] = positions
    row["delta"] = delta
    print(cid, row["video_grid_thw"], row["qvu_frames"], video_kwargs, delta)
    return row


def main() -> None:
    from importlib.metadata import version

    import av
    import tokenizers
    import torch
    import torchvision
    import transformers
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(1)
    tok = base.tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run_case(case, tok, Path(tmp)) for case in CASES]
    doc = {
        "generator": GENERATOR,
        "reference": (
            "qwen_vl_utils.process_vision_info (fetch_video, reader torchvision: "
            "torchvision.io.read_video on PyAV), then Qwen2VLProcessor / Qwen2_5_VLProcessor("
            "Qwen2VLImageProcessor(), <local WordLevel>, Qwen2VLVideoProcessor()); "
            "get_rope_index of Qwen2VLModel / Qwen2_5_VLModel"
        ),
        "call": (
            "images, pairs, video_kwargs = process_vision_info(messages, "
            "return_video_kwargs=True, return_video_metadata=True); processor(text=[prompt], "
            "images=images, videos=[v for v, _ in pairs], video_metadata=[m for _, m in pairs], "
            "return_tensors='np', **video_kwargs)"
        ),
        "video_reader": "FORCE_QWENVL_VIDEO_READER=torchvision",
        "why_metadata": (
            "transformers 5.23 takes second_per_grid_ts from each video's metadata.sampled_fps "
            "and refuses the list of fps that process_vision_info gives without "
            "return_video_metadata (qwen-vl-utils' Qwen2.5-VL form)"
        ),
        "tokens_per_second": base.TOKENS_PER_SECOND,
        "image": {"recipe": base.IMAGE_RECIPE, "passed_as": "a PIL RGB image (fetch_image)"},
        "tensor_hash": "sha256 of the float32 C-contiguous bytes",
        "python": platform.python_version(),
        "qwen_vl_utils": version("qwen-vl-utils"),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "av": av.__version__,
        "numpy": np.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cases": rows,
    }
    base.OUT = OUT
    base.write(doc)
    print(f"{len(rows)} cases, {OUT.stat().st_size} bytes -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
