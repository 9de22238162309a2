"""The parity corpus, shared by gen_goldens.py (torch venv) and the tests (CI): the repository's
example photos (decoded by Pillow), photo mosaics at camera sizes (so the resize really
downscales real structure), and seeded noise at the NaViT rule's edge sizes; each case with the
params it runs under (HF's names; the defaults are moonshotai/Kimi-K2.5's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

IMAGES = Path(__file__).resolve().parents[3] / "examples" / "images"
PHOTOS = ["astronaut.jpg", "chelsea.png", "coffee.webp"]

# (patch, channel, row, col) points of pixel_values whose values are stored with each golden.
SAMPLES = [(0, 0, 0, 0), (0, 2, 13, 13), (1, 1, 7, 3), (-1, 0, 13, 13), (-1, 2, 0, 5)]

# (id, source, params); sources: {"photo": file}, {"mosaic": [file, w, h]}, {"noise": [w, h, seed]}.
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    *[(name.split(".")[0], {"photo": name}, {}) for name in PHOTOS],
    ("mosaic-1920x1080", {"mosaic": ["astronaut.jpg", 1920, 1080]}, {}),
    ("mosaic-4032x3024", {"mosaic": ["coffee.webp", 4032, 3024]}, {}),
    ("mosaic-3000x4000", {"mosaic": ["chelsea.png", 3000, 4000]}, {}),
    ("mosaic-1920x1080-4096", {"mosaic": ["astronaut.jpg", 1920, 1080]}, {"max_patches": 4096}),
    # Tiny sides: patch counts floor to 0 and count as 1; nothing resizes, everything pads.
    ("1x1", {"noise": [1, 1, 1]}, {}),
    ("13x13", {"noise": [13, 13, 2]}, {}),
    ("14x14", {"noise": [14, 14, 3]}, {}),
    ("27x29", {"noise": [27, 29, 4]}, {}),
    ("28x28", {"noise": [28, 28, 5]}, {}),
    ("500x300", {"noise": [500, 300, 6]}, {}),
    # The patch budget: 1792x1792 is exactly 128x128 patches (16384), one more pixel a side
    # tips the floor counts over it only at 1806 (129 patches).
    ("1792x1792", {"noise": [1792, 1792, 7]}, {}),
    ("1806x1806", {"noise": [1806, 1806, 8]}, {}),
    ("2500x1000", {"noise": [2500, 1000, 9]}, {}),
    # The per-side cap (512 patches, 7168 px) and extreme aspect ratios.
    ("17x3000", {"noise": [17, 3000, 10]}, {}),
    ("3000x17", {"noise": [3000, 17, 11]}, {}),
    ("20000x1", {"noise": [20000, 1, 12]}, {}),
    ("1x20000", {"noise": [1, 20000, 13]}, {}),
    ("7168x20", {"noise": [7168, 20, 14]}, {}),
    ("7169x20", {"noise": [7169, 20, 15]}, {}),
    (
        "8000x500-side256",
        {"noise": [8000, 500, 16]},
        {"size": {"max_height": 256, "max_width": 256}},
    ),
]


def photo(name: str) -> np.ndarray:
    with Image.open(IMAGES / name) as im:
        return np.asarray(im.convert("RGB"))


def make_input(source: dict[str, Any]) -> np.ndarray:
    """The RGB uint8 ``[h, w, 3]`` array of a case's source."""
    if "photo" in source:
        return photo(source["photo"])
    if "mosaic" in source:
        name, w, h = source["mosaic"]
        tile = photo(name)
        reps = (-(-h // tile.shape[0]), -(-w // tile.shape[1]), 1)
        return np.ascontiguousarray(np.tile(tile, reps)[:h, :w])
    w, h, seed = source["noise"]
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def hf_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """The case's params as Kimi_K25ImageProcessor's keywords (the same names)."""
    return dict(params)
