"""The inputs of the torchvision goldens, shared by gen_goldens.py (with torch) and the replaying
test (without): seeded noise or a named scikit-image photo, the cases with their token budgets,
and the ``(patch, index)`` points of ``pixel_values`` whose values are stored."""

from __future__ import annotations

from typing import Any

import numpy as np

# Inside the smallest budget's 630 patches (70 tokens), so every case has them; rows past the
# image's own patches are the zero padding, which they check too.
SAMPLES = [(0, 0), (1, 100), (17, 383), (100, 767), (300, 5), (629, 700)]

# (id, source, max_soft_tokens); sources: {"photo": name} or {"noise": [w, h, seed]}.
CASES: list[tuple[str, dict[str, Any], int]] = [
    ("astronaut", {"photo": "astronaut"}, 280),
    ("chelsea", {"photo": "chelsea"}, 280),
    ("coffee", {"photo": "coffee"}, 280),
    ("rocket", {"photo": "rocket"}, 280),
    ("astronaut-70", {"photo": "astronaut"}, 70),
    ("coffee-1120", {"photo": "coffee"}, 1120),
    ("1x1", {"noise": [1, 1, 1]}, 280),
    ("17x3000", {"noise": [17, 3000, 2]}, 280),
    ("3000x17", {"noise": [3000, 17, 3]}, 280),
    ("500x300", {"noise": [500, 300, 4]}, 280),
    ("768x768", {"noise": [768, 768, 5]}, 280),
    ("1920x1080", {"noise": [1920, 1080, 6]}, 280),
    ("4032x3024", {"noise": [4032, 3024, 7]}, 280),
    ("1920x1080-70", {"noise": [1920, 1080, 8]}, 70),
    ("4032x3024-1120", {"noise": [4032, 3024, 9]}, 1120),
    ("17x3000-70", {"noise": [17, 3000, 10]}, 70),
    # Around the 48-multiples: 864x672 is on the grid at 280 tokens (no resize, the uint8
    # pixels rescaled as they are), one pixel either side resizes (863 -> 864 on one side
    # only); so are 432x336 at 70 and 1776x1392 at 1120; 48x48 and 47x49 upscale.
    ("864x672", {"noise": [864, 672, 11]}, 280),
    ("863x672", {"noise": [863, 672, 12]}, 280),
    ("865x673", {"noise": [865, 673, 13]}, 280),
    ("48x48", {"noise": [48, 48, 14]}, 280),
    ("47x49", {"noise": [47, 49, 15]}, 70),
    ("432x336-70", {"noise": [432, 336, 16]}, 70),
    ("1776x1392-1120", {"noise": [1776, 1392, 17]}, 1120),
    ("1775x1393-1120", {"noise": [1775, 1393, 18]}, 1120),
    # A side that floors to nothing: 48 on it, the longest-side cap on the other.
    ("20000x1", {"noise": [20000, 1, 19]}, 280),
    ("1x5000-70", {"noise": [1, 5000, 20]}, 70),
]


def make_input(source: dict[str, Any]) -> np.ndarray:
    if "photo" in source:
        import skimage.data

        return np.ascontiguousarray(getattr(skimage.data, source["photo"])()[:, :, :3])
    w, h, seed = source["noise"]
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
