"""The inputs of the torchvision goldens, shared by gen_goldens.py (with torch) and the replaying
test (without): seeded noise or a named scikit-image photo, and the sample points stored."""

from __future__ import annotations

from typing import Any

import numpy as np

SAMPLES = [(0, 0, 0), (1, 100, 200), (2, 447, 448), (0, 895, 895), (1, 300, 17), (2, 640, 3)]


def make_input(source: dict[str, Any]) -> np.ndarray:
    if "photo" in source:
        import skimage.data

        return np.ascontiguousarray(getattr(skimage.data, source["photo"])()[:, :, :3])
    w, h, seed = source["noise"]
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
