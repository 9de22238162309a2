"""The inputs of the goldens, shared by the generators (in a torch venv) and the replaying tests
(without torch): photos of scikit-image's bundled samples decoded by Pillow as HF's loaders do,
seeded noise, the image cases with their model type and ``size``, the prompts of the position
goldens, and the ``(row, column)`` points of ``pixel_values`` whose values are stored."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

#: Points of ``pixel_values`` ([rows, 1176]) stored as values (fixtures must stay small).
SAMPLES = [(0, 0), (1, 100), (3, 587), (5, 1175), (8, 400), (31, 1000)]

SHIPPED = {"shortest_edge": 12544, "longest_edge": 9633792}
CLASS = {"shortest_edge": 112 * 112, "longest_edge": 28 * 28 * 15000}
SMALL = {"shortest_edge": 3136, "longest_edge": 100_352}

# (id, source, model type, size); sources: {"photo": file} or {"noise": [w, h, seed]}.
CASES: list[tuple[str, dict[str, Any], str, dict[str, int]]] = [
    ("astronaut", {"photo": "astronaut.png"}, "glm4v", SHIPPED),
    ("chelsea", {"photo": "chelsea.png"}, "glm4v", SHIPPED),
    ("coffee", {"photo": "coffee.png"}, "glm46v", SHIPPED),
    ("rocket", {"photo": "rocket.jpg"}, "glm46v", SHIPPED),
    ("hubble", {"photo": "hubble_deep_field.jpg"}, "glm4v", CLASS),
    ("motorcycle", {"photo": "motorcycle_left.png"}, "glm46v", CLASS),
    ("camera-small", {"photo": "camera.png"}, "glm4v", SMALL),
    ("logo", {"photo": "logo.png"}, "glm4v", SHIPPED),
    ("1x1", {"noise": [1, 1, 1]}, "glm4v", SHIPPED),
    ("2x1", {"noise": [2, 1, 2]}, "glm46v", SHIPPED),
    ("1x200", {"noise": [1, 200, 3]}, "glm4v", SHIPPED),
    ("27x5000", {"noise": [27, 5000, 4]}, "glm4v", SHIPPED),
    ("5000x25", {"noise": [5000, 25, 5]}, "glm46v", SHIPPED),
    ("13x41", {"noise": [13, 41, 6]}, "glm4v", SHIPPED),
    ("28x28", {"noise": [28, 28, 7]}, "glm4v", SHIPPED),
    ("56x56", {"noise": [56, 56, 8]}, "glm46v", SHIPPED),
    ("83x84", {"noise": [83, 84, 9]}, "glm4v", SHIPPED),
    ("640x480", {"noise": [640, 480, 10]}, "glm4v", SHIPPED),
    ("1920x1080", {"noise": [1920, 1080, 11]}, "glm4v", SHIPPED),
    ("1080x1920-class", {"noise": [1080, 1920, 12]}, "glm46v", CLASS),
    ("2201x2199", {"noise": [2201, 2199, 13]}, "glm4v", SHIPPED),
    ("4032x3024", {"noise": [4032, 3024, 14]}, "glm4v", SHIPPED),
    ("4032x3024-class", {"noise": [4032, 3024, 15]}, "glm46v", CLASS),
    ("640x480-small", {"noise": [640, 480, 16]}, "glm4v", SMALL),
    ("3000x31-small", {"noise": [3000, 31, 17]}, "glm46v", SMALL),
]

# The position goldens: (id, model type, prompt text, image sources in prompt order).
I = "<|begin_of_image|><|image|><|end_of_image|>"  # noqa: E741
ROPE_CASES: list[tuple[str, str, str, list[dict[str, Any]]]] = [
    ("text-only", "glm4v", "Describe this and compare", []),
    ("one-image", "glm4v", f"[gMASK]<sop><|user|>\n{I}Describe this<|assistant|>", [
        {"noise": [640, 480, 20]}]),
    ("two-images", "glm4v", f"{I} and {I} compare", [
        {"noise": [300, 1000, 21]}, {"noise": [1920, 1080, 22]}]),
    ("wide-then-tall", "glm4v_moe", f"compare {I}{I} with", [
        {"noise": [5000, 30, 23]}, {"noise": [20, 700, 24]}]),
    ("moe-one-image", "glm4v_moe", f"{I}", [{"noise": [1, 1, 25]}]),
    ("glm46v-three", "glm46v", f"Describe {I} this {I} and {I}", [
        {"noise": [800, 600, 26]}, {"noise": [30, 30, 27]}, {"photo": "astronaut.png"}]),
]  # fmt: skip


def skimage_data() -> Path:
    """scikit-image's bundled sample files: the installed package's, else (in a venv without
    it, the generators') those of the repository's ``.venv``."""
    try:
        import skimage

        return Path(skimage.__file__).parent / "data"
    except ImportError:
        found = sorted(ROOT.glob(".venv/lib/python*/site-packages/skimage/data"))
        if not found:
            sys.exit("scikit-image's sample files not found: run `make build` first")
        return found[0]


def hf_rgb(im: Image.Image) -> Image.Image:
    """What HF's loaders make of an opened image: EXIF transpose, then alpha composited on
    white (``convert_to_rgb``), else ``convert("RGB")``."""
    im = ImageOps.exif_transpose(im)
    if im.mode in ("RGBA", "LA") or "transparency" in im.info:
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return im.convert("RGB")


def make_input(source: dict[str, Any]) -> np.ndarray:
    """RGB uint8 ``[h, w, 3]`` of a source."""
    if "photo" in source:
        with Image.open(skimage_data() / source["photo"]) as im:
            im.load()
            return np.ascontiguousarray(np.asarray(hf_rgb(im)))
    w, h, seed = source["noise"]
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
