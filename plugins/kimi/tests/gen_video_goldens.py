"""Goldens of transformers' Kimi K2.5 *processor* on real clips, end to end (run in the torch
venv: ``/work/torchenv/bin/python plugins/kimi/tests/gen_video_goldens.py``).

Each clip is made by `sglang_mm_core.conformance.video.make_clip` (recipe and SHA-256
recorded), written to a file, and its path handed to ``Kimi_K25Processor`` as a user does::

    processor(text=[prompt], images=..., videos=[path], return_tensors="np", **videos_kwargs)

so HF reads the clip (``load_video`` with PyAV: transformers 5.23 picks torchcodec, which this
venv lacks, so the video processor's ``fetch_videos`` is HF's own with ``backend="pyav"``, as
``sglang_mm_core.conformance.video.hf_reads_with_pyav`` sets it), samples its frames
(``BaseVideoProcessor.sample_frames``), cuts them into chunks of 4, resizes and pads each frame
(torchvision), and writes each chunk's timestamp, ``<|media_begin|>video<|media_content|>``, its
video tokens and ``<|media_end|>`` into the text, tokenized as a whole.

The tokenizer is fixtures/kimi_tokenizer/tokenizer.json, written here from _kimi_refs.py (Kimi's
special-token ids and digit splitting, an id of our choosing for
``<|kimi_k25_video_placeholder|>``) and loaded by HF from the file. Writes
fixtures/video_goldens.json with every version."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _kimi_corpus import make_input  # noqa: E402
from _kimi_refs import TOKENIZER_JSON, tokenizer_object  # noqa: E402


def _load_clips() -> Any:
    """The core's conformance/video.py, loaded from its file (the torch venv has no sglang-mm:
    it needs only numpy and PyAV)."""
    path = HERE.parents[2] / "sglang_mm_core" / "conformance" / "video.py"
    spec = importlib.util.spec_from_file_location("_conformance_video", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


clips = _load_clips()
make_clip = clips.make_clip

OUT = HERE / "fixtures" / "video_goldens.json"
V = "<|kimi_k25_video_placeholder|>"
I = "<|media_begin|>image<|media_content|><|media_pad|><|media_end|>"  # noqa: E741
# (patch, channel, row, col) points of pixel_values_videos stored with each golden.
SAMPLES = [(0, 0, 0, 0), (1, 2, 13, 13), (-1, 1, 5, 9), (-2, 0, 13, 0)]

# id, clip recipe (codec, w, h, frames, rate), prompt, per-call videos kwargs
CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("h264-4f", {"codec": "libx264", "w": 200, "h": 120, "n": 23, "rate": 10}, f"Describe {V}", {}),
    (
        "h264-5chunks",
        {"codec": "libx264", "w": 320, "h": 180, "n": 250, "rate": 25},
        f"Describe {V}",
        {},
    ),
    (
        "h264-short-last",
        {"codec": "libx264", "w": 96, "h": 64, "n": 175, "rate": 25},
        f"Describe {V}",
        {},
    ),
    (
        "h264-720p",
        {"codec": "libx264", "w": 1280, "h": 720, "n": 50, "rate": 25},
        f"Describe {V}",
        {},
    ),
    (
        "vp9-fps4",
        {"codec": "libvpx-vp9", "w": 160, "h": 90, "n": 60, "rate": 24},
        f"Describe {V}",
        {"fps": 4},
    ),
    (
        "h264-nframes5",
        {"codec": "libx264", "w": 100, "h": 100, "n": 40, "rate": 25},
        f"Describe {V}",
        {"num_frames": 5, "fps": None},
    ),
    (
        "image-and-video",
        {"codec": "libx264", "w": 120, "h": 80, "n": 30, "rate": 10},
        f"Compare {I} and {V}",
        {},
    ),
]
IMAGE = {"noise": [150, 100, 7]}


def sha256(a: Any) -> str:
    if isinstance(a, (bytes, bytearray)):
        return hashlib.sha256(a).hexdigest()
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def prompt(body: str) -> str:
    return f"<|im_user|>user<|im_middle|>{body}<|im_end|><|im_assistant|>assistant"


def main() -> None:
    import av
    import PIL
    import torch
    import torchvision
    import transformers
    from PIL import Image
    from transformers import PreTrainedTokenizerFast
    from transformers.models.kimi_k25.image_processing_kimi_k25 import Kimi_K25ImageProcessor
    from transformers.models.kimi_k25.processing_kimi_k25 import Kimi_K25Processor
    from transformers.models.kimi_k25.video_processing_kimi_k25 import Kimi_K25VideoProcessor

    TOKENIZER_JSON.parent.mkdir(parents=True, exist_ok=True)
    tokenizer_object().save(str(TOKENIZER_JSON))
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER_JSON), unk_token="[UNK]", pad_token="[PAD]"
    )
    video_processor = Kimi_K25VideoProcessor()
    clips.hf_reads_with_pyav(video_processor)
    processor = Kimi_K25Processor(
        image_processor=Kimi_K25ImageProcessor(), tokenizer=tok, video_processor=video_processor
    )
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for cid, clip, body, kwargs in CASES:
            data = make_clip(clip["codec"], clip["w"], clip["h"], clip["n"], rate=clip["rate"])
            path = Path(tmp, f"{cid}.mp4")
            path.write_bytes(data)
            text = prompt(body)
            images = [Image.fromarray(make_input(IMAGE))] if "<|media_pad|>" in text else None
            out = processor(
                text=[text], images=images, videos=[str(path)], return_tensors="np", **kwargs
            )
            pv = out["pixel_values_videos"]
            meta = out["video_metadata"][0] if "video_metadata" in out else None
            cases.append(
                {
                    "id": cid,
                    "clip": clip,
                    "clip_sha256": sha256(data),
                    "text": text,
                    "image": IMAGE if images else None,
                    "videos_kwargs": kwargs,
                    "input_ids": out["input_ids"][0].tolist(),
                    "pixel_values_videos_shape": list(pv.shape),
                    "pixel_values_videos_sha256": sha256(pv),
                    "samples": [float(pv[p, c, y, x]) for p, c, y, x in SAMPLES],
                    "video_grid_thw": np.asarray(out["video_grid_thw"]).tolist(),
                    "frames_indices": None
                    if meta is None
                    else [int(i) for i in meta.frames_indices],
                    "pixel_values_sha256": sha256(out["pixel_values"]) if images else None,
                }
            )
            print(f"{cid}: grid {cases[-1]['video_grid_thw']}, {list(pv.shape)}")
    body: dict[str, Any] = {
        "meta": {
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "transformers": transformers.__version__,
            "av": av.__version__,
            "numpy": np.__version__,
            "PIL": PIL.__version__,
            "machine": platform.machine(),
            "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "reference": "transformers Kimi_K25Processor with Kimi_K25VideoProcessor (PyAV "
            "load_video) and Kimi_K25ImageProcessor, CPU",
            "generator": "plugins/kimi/tests/gen_video_goldens.py",
            "tokenizer_sha256": sha256(TOKENIZER_JSON.read_bytes()),
            "sample_points": SAMPLES,
        },
        "cases": cases,
    }
    OUT.write_text(json.dumps(body, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
