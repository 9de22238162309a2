"""Goldens of the video settings transformers resolves for a Qwen-VL model directory: each case
is a directory's files (config.json, preprocessor_config.json and, in some, a
video_preprocessor_config.json or a processor_config.json holding a ``video_processor``),
written out and loaded with ``AutoVideoProcessor.from_pretrained``; the processor's resolved
``size``, ``do_sample_frames``, ``fps``, ``num_frames``, ``min_frames``, ``max_frames``,
``cap_pixels_per_frame``, patch geometry and table are recorded beside the files, so that
``spec_from_hf``'s video params are checked against what HF itself reads (its video processors
need torch, which CI does not install).

Runs in a venv with torch, torchvision and transformers (not CI); writes
fixtures/video_settings_goldens.json with every version::

    /work/torchvenv/bin/python plugins/qwen_vl/tests/gen_video_settings_goldens.py"""

from __future__ import annotations

import json
import platform
import tempfile
import warnings
from pathlib import Path
from typing import Any

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
HALF = [0.5, 0.5, 0.5]


def _config(model_type: str, patch: int, ids: tuple[int, int, int, int]) -> dict[str, Any]:
    image, video, start, end = ids
    return {
        "model_type": model_type,
        "image_token_id": image,
        "video_token_id": video,
        "vision_start_token_id": start,
        "vision_end_token_id": end,
        "vision_config": {"patch_size": patch, "spatial_merge_size": 2, "temporal_patch_size": 2},
    }


QWEN_IDS = (151655, 151656, 151652, 151653)
QWEN3_5_IDS = (248056, 248057, 248053, 248054)
Q2_PP = {
    "min_pixels": 3136,
    "max_pixels": 12845056,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": CLIP_MEAN,
    "image_std": CLIP_STD,
    "image_processor_type": "Qwen2VLImageProcessor",
}
Q3_PP = {
    "size": {"longest_edge": 16777216, "shortest_edge": 65536},
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": HALF,
    "image_std": HALF,
    "image_processor_type": "Qwen2VLImageProcessorFast",
}
Q3_VIDEO = {  # the shape of the published Qwen3-VL checkpoints' video_preprocessor_config.json
    "size": {"longest_edge": 25165824, "shortest_edge": 4096},
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": HALF,
    "image_std": HALF,
    "processor_class": "Qwen3VLProcessor",
    "video_processor_type": "Qwen3VLVideoProcessor",
}

CASES: list[tuple[str, str, dict[str, dict[str, Any]]]] = [
    (
        "qwen2-preprocessor-only",
        "an older Qwen2-VL checkpoint: its videos read the image processor's file",
        {"config.json": _config("qwen2_vl", 14, QWEN_IDS), "preprocessor_config.json": Q2_PP},
    ),
    (
        "qwen2_5-preprocessor-only",
        "the same for Qwen2.5-VL",
        {"config.json": _config("qwen2_5_vl", 14, QWEN_IDS), "preprocessor_config.json": Q2_PP},
    ),
    (
        "qwen3-preprocessor-only",
        "a Qwen3-VL directory without a video file: the image file's size, Qwen3's sampling",
        {"config.json": _config("qwen3_vl", 16, QWEN_IDS), "preprocessor_config.json": Q3_PP},
    ),
    (
        "qwen3_5-preprocessor-only",
        "the same for Qwen3.5",
        {"config.json": _config("qwen3_5", 16, QWEN3_5_IDS), "preprocessor_config.json": Q3_PP},
    ),
    (
        "qwen3-video-file",
        "the published Qwen3-VL shape: a video_preprocessor_config.json with its own size",
        {
            "config.json": _config("qwen3_vl", 16, QWEN_IDS),
            "preprocessor_config.json": Q3_PP,
            "video_preprocessor_config.json": Q3_VIDEO,
        },
    ),
    (
        "qwen2-video-file-fps",
        "a Qwen2-VL video file that samples at 1.5 fps within 8..64 frames",
        {
            "config.json": _config("qwen2_vl", 14, QWEN_IDS),
            "preprocessor_config.json": Q2_PP,
            "video_preprocessor_config.json": {
                "video_processor_type": "Qwen2VLVideoProcessor",
                "size": {"shortest_edge": 100352, "longest_edge": 401408},
                "do_sample_frames": True,
                "fps": 1.5,
                "min_frames": 8,
                "max_frames": 64,
            },
        },
    ),
    (
        "qwen2_5-video-file-num-frames",
        "flat min_pixels / max_pixels (they win over size) and a fixed num_frames",
        {
            "config.json": _config("qwen2_5_vl", 14, QWEN_IDS),
            "preprocessor_config.json": Q2_PP,
            "video_preprocessor_config.json": {
                "min_pixels": 50176,
                "max_pixels": 200704,
                "size": {"shortest_edge": 1, "longest_edge": 2},
                "do_sample_frames": True,
                "num_frames": 16,
            },
        },
    ),
    (
        "qwen2-video-file-cap",
        "cap_pixels_per_frame on",
        {
            "config.json": _config("qwen2_vl", 14, QWEN_IDS),
            "preprocessor_config.json": Q2_PP,
            "video_preprocessor_config.json": {
                "do_sample_frames": True,
                "fps": 2.0,
                "cap_pixels_per_frame": True,
            },
        },
    ),
    (
        "qwen3-nested-processor-config",
        "transformers 5's processor_config.json with a nested video_processor wins over the files",
        {
            "config.json": _config("qwen3_vl", 16, QWEN_IDS),
            "preprocessor_config.json": Q3_PP,
            "video_preprocessor_config.json": Q3_VIDEO,
            "processor_config.json": {
                "processor_class": "Qwen3VLProcessor",
                "video_processor": {
                    **Q3_VIDEO,
                    "size": {"longest_edge": 1048576, "shortest_edge": 8192},
                    "fps": 1.0,
                    "max_frames": 128,
                },
            },
        },
    ),
    (
        "qwen3-no-sampling",
        "a Qwen3-VL video file that keeps every frame",
        {
            "config.json": _config("qwen3_vl", 16, QWEN_IDS),
            "preprocessor_config.json": Q3_PP,
            "video_preprocessor_config.json": {**Q3_VIDEO, "do_sample_frames": False},
        },
    ),
]

RECORDED = (
    "do_sample_frames",
    "fps",
    "num_frames",
    "min_frames",
    "max_frames",
    "cap_pixels_per_frame",
    "patch_size",
    "merge_size",
    "temporal_patch_size",
)


def resolve(files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from transformers import AutoVideoProcessor

    with tempfile.TemporaryDirectory() as d:
        for name, content in files.items():
            (Path(d) / name).write_text(json.dumps(content, indent=2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vp = AutoVideoProcessor.from_pretrained(d)
    out: dict[str, Any] = {"class": type(vp).__name__, "size": dict(vp.size)}
    for key in RECORDED:
        value = getattr(vp, key, None)
        out[key] = None if value is None else value
    out["image_mean"] = [float(x) for x in vp.image_mean]
    out["image_std"] = [float(x) for x in vp.image_std]
    return out


def main() -> None:
    import torch
    import torchvision
    import transformers

    cases = [
        {"id": cid, "why": why, "files": files, "resolved": resolve(files)}
        for cid, why, files in CASES
    ]
    doc = {
        "generator": "plugins/qwen_vl/tests/gen_video_settings_goldens.py",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "reference": "transformers.AutoVideoProcessor.from_pretrained(model directory)",
        "cases": cases,
    }
    out = Path(__file__).parent / "fixtures" / "video_settings_goldens.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    for c in cases:
        print(c["id"], c["resolved"])


if __name__ == "__main__":
    main()
