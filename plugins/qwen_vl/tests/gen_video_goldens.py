"""Goldens of transformers' Qwen2-VL and Qwen3-VL video processors (torchvision, CPU) on
decoded frames, for `video_features.video_pixel_values`: each case's frames are regenerated
from their recipe (seeded numpy), and the goldens keep the SHA-256 of ``pixel_values_videos``'s
float32 bytes, its shape and ``video_grid_thw``. Runs in a venv with torch and torchvision
(not CI); writes fixtures/video_goldens.json with every version.

    /path/to/torchenv/bin/python plugins/qwen_vl/tests/gen_video_goldens.py"""

from __future__ import annotations

import hashlib
import json
import platform
import warnings
from pathlib import Path
from typing import Any

import numpy as np

FIXTURES = Path(__file__).parent / "fixtures"

#: (id, generation, frames, height, width, seed, kind)
CASES = [
    ("qwen2-noise-5x90x160", "qwen2", 5, 90, 160, 1, "noise"),
    ("qwen2-gradient-4x360x640", "qwen2", 4, 360, 640, 2, "gradient"),
    ("qwen2-odd-3x97x61", "qwen2", 3, 97, 61, 3, "noise"),
    ("qwen2-one-frame-1x28x28", "qwen2", 1, 28, 28, 4, "noise"),
    ("qwen2-tall-6x500x60", "qwen2", 6, 500, 60, 5, "gradient"),
    ("qwen2-big-2x1080x1920", "qwen2", 2, 1080, 1920, 6, "gradient"),
    ("qwen3-noise-4x90x160", "qwen3", 4, 90, 160, 7, "noise"),
    ("qwen3-gradient-7x240x320", "qwen3", 7, 240, 320, 8, "gradient"),
]


def frames(t: int, h: int, w: int, seed: int, kind: str) -> np.ndarray:
    """uint8 ``[t, h, w, 3]``: noise, or moving gradients with a little noise."""
    rng = np.random.default_rng(seed)
    if kind == "noise":
        return rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8)
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.empty((t, h, w, 3), dtype=np.uint8)
    for k in range(t):
        base = np.stack([(xx * 3 + 7 * k) % 256, (yy * 2 + 5 * k) % 256, (xx + yy) % 256], -1)
        out[k] = np.clip(base + rng.integers(-12, 13, (h, w, 3)), 0, 255)
    return out


def processor(generation: str) -> Any:
    from transformers import Qwen2VLVideoProcessor, Qwen3VLVideoProcessor

    if generation == "qwen2":
        return Qwen2VLVideoProcessor()
    return Qwen3VLVideoProcessor()


def main() -> None:
    import torch
    import torchvision
    import transformers

    torch.set_num_threads(1)
    out = []
    for cid, gen, t, h, w, seed, kind in CASES:
        video = frames(t, h, w, seed, kind)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = processor(gen)(
                videos=[video],
                do_sample_frames=False,
                cap_pixels_per_frame=False,
                return_tensors="np",
            )
        pv = np.ascontiguousarray(got["pixel_values_videos"], dtype=np.float32)
        grid = np.asarray(got["video_grid_thw"]).tolist()
        out.append(
            {
                "id": cid,
                "generation": gen,
                "frames": [t, h, w, seed, kind],
                "input_sha256": hashlib.sha256(video.tobytes()).hexdigest(),
                "shape": list(pv.shape),
                "video_grid_thw": grid,
                "pixel_values_videos_sha256": hashlib.sha256(pv.tobytes()).hexdigest(),
            }
        )
        print(cid, pv.shape, grid)
    meta = {
        "generator": "plugins/qwen_vl/tests/gen_video_goldens.py",
        "reference": "transformers Qwen2VLVideoProcessor / Qwen3VLVideoProcessor (torchvision)",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cases": out,
    }
    (FIXTURES / "video_goldens.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
