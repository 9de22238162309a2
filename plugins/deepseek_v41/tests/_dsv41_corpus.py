"""The inputs of the DeepSeek-V4.1 parity tests and goldens, shared by gen_goldens.py (with
torch) and the tests (without): scikit-image's bundled photos and seeded noise, each with the
model-config overrides of its case. Depends on numpy, Pillow and scikit-image only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import skimage
from PIL import Image

SKIMAGE_DATA = Path(skimage.__file__).parent / "data"
PHOTOS = (
    "astronaut.png",
    "chelsea.png",
    "coffee.png",
    "rocket.jpg",
    "hubble_deep_field.jpg",
    "motorcycle_left.png",
    "camera.png",
    "logo.png",
)

#: SGLang's defaults (configs/deepseek_v4.py), in its flat names.
DEFAULT_ARGS: dict[str, Any] = {
    "vision_patch_size": 14,
    "vision_downsample_ratio": 3,
    "vision_max_n_token": 1024,
    "vision_min_pixels": 295936,
    "vision_max_wh_ratio": None,
}

# (id, source, overrides of DEFAULT_ARGS); sources: {"photo": name} or {"noise": [w, h, seed]}
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    *[(name.split(".")[0], {"photo": name}, {}) for name in PHOTOS],
    ("1x1-upscaled", {"noise": [1, 1, 1]}, {}),
    ("97x61-upscaled", {"noise": [97, 61, 2]}, {}),
    ("1920x1080-shrunk", {"noise": [1920, 1080, 3]}, {}),
    ("4032x3024-shrunk", {"noise": [4032, 3024, 4]}, {}),
    ("1x1561-at-budget", {"noise": [1, 1561, 5]}, {}),
    ("22x4000-tall-collapse", {"noise": [22, 4000, 6]}, {}),
    ("4000x22-wide-collapse", {"noise": [4000, 22, 7]}, {}),
    ("5000x800-shrinks-in-width", {"noise": [5000, 800, 8]}, {}),
    ("800x5000-shrinks-in-height", {"noise": [800, 5000, 9]}, {}),
    ("1x50000-nothing-pasted", {"noise": [1, 50000, 10]}, {}),
    ("1000x400-stretched", {"noise": [1000, 400, 11]}, {"vision_max_wh_ratio": 2}),
    ("800x400-ratio-exact", {"noise": [800, 400, 12]}, {"vision_max_wh_ratio": 2}),
    ("799x400-padded", {"noise": [799, 400, 13]}, {"vision_max_wh_ratio": 2}),
    ("900x300-float-ratio", {"noise": [900, 300, 14]}, {"vision_max_wh_ratio": 2.5}),
    (
        "640x480-patch16-ratio2",
        {"noise": [640, 480, 15]},
        {"vision_patch_size": 16, "vision_downsample_ratio": 2, "vision_max_n_token": 300},
    ),
    ("600x400-no-min", {"noise": [600, 400, 16]}, {"vision_min_pixels": 0}),
]


def make_image(source: dict[str, Any]) -> Image.Image:
    """The case's image as SGLang's ``load_image`` leaves it (opened and loaded, any mode)."""
    if "photo" in source:
        im = Image.open(SKIMAGE_DATA / source["photo"])
        im.load()
        return im
    w, h, seed = source["noise"]
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")


def case_args(overrides: dict[str, Any]) -> dict[str, Any]:
    return {**DEFAULT_ARGS, **overrides}
