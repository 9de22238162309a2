"""Shared test material: the photo corpus (scikit-image's bundled samples, decoded by Pillow),
the generated edge cases, the parameter sets, and the HuggingFace reference processor."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import skimage
from PIL import Image

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

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

# Parameter sets as the published models ship them (docs/families/qwen_vl.md).
QWEN2 = {
    "patch_size": 14,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "min_pixels": 3136,
    "max_pixels": 12845056,
    "image_mean": (0.48145466, 0.4578275, 0.40821073),
    "image_std": (0.26862954, 0.26130258, 0.27577711),
}
QWEN3 = {
    "patch_size": 16,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "min_pixels": 65536,
    "max_pixels": 16777216,
    "image_mean": (0.5, 0.5, 0.5),
    "image_std": (0.5, 0.5, 0.5),
}


def photo(name: str) -> Image.Image:
    """A corpus photo as HF's ``load_image`` + ``convert_to_rgb`` would give it (RGB)."""
    with Image.open(SKIMAGE_DATA / name) as im:
        im.load()
        if im.mode in ("RGBA", "LA") or "transparency" in im.info:
            rgba = im.convert("RGBA")
            white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            return Image.alpha_composite(white, rgba).convert("RGB")
        return im.convert("RGB")


def noise(width: int, height: int, seed: int = 0) -> Image.Image:
    """A random RGB image; every sample value occurs for all but the tiniest sizes."""
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    return Image.fromarray(arr, "RGB")


def gradient(width: int, height: int) -> Image.Image:
    """A smooth image (where resampling errors show as structured differences)."""
    y, x = np.mgrid[0:height, 0:width]
    r = (x * 255 // max(width - 1, 1)).astype(np.uint8)
    g = (y * 255 // max(height - 1, 1)).astype(np.uint8)
    b = ((x + y) * 7 % 256).astype(np.uint8)
    return Image.fromarray(np.dstack([r, g, b]), "RGB")


def hf_pil_processor(params: dict[str, Any]) -> Any:
    """``Qwen2VLImageProcessorPil`` configured like the given params."""
    from transformers import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(
        patch_size=params["patch_size"],
        merge_size=params["merge_size"],
        temporal_patch_size=params["temporal_patch_size"],
        image_mean=list(params["image_mean"]),
        image_std=list(params["image_std"]),
        size={"shortest_edge": params["min_pixels"], "longest_edge": params["max_pixels"]},
    )


def hf_reference(processor: Any, image: Image.Image) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """``(pixel_values, image_grid_thw)`` of the HF processor for one image."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = processor(images=[image], return_tensors="np")
    return np.asarray(out["pixel_values"]), np.asarray(out["image_grid_thw"])


def as_bits(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """float32 values as their raw bits, so equality is bit equality (-0.0 != 0.0, NaN ok)."""
    a = np.ascontiguousarray(a)
    assert a.dtype == np.float32, a.dtype
    return a.view(np.uint32)
