"""The live references (installed transformers, no torch): ``Glm4vImageProcessorPil`` /
``Glm46VImageProcessorPil`` and the ``Glm4vProcessor`` / ``Glm46VProcessor`` expansion on the
local tokenizer of `_glm4v_tokenizer` (their video processors need torch, so the processors are
built without one: these tests send no video through them); the photo corpus and generated
images; the presets of each model type."""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import numpy.typing as npt
import skimage
from _glm4v_corpus import hf_rgb
from _glm4v_tokenizer import hf_tokenizer
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
#: The size settings GLM's checkpoints ship (preprocessor_config.json) and the classes' own.
SHIPPED_SIZE = {"shortest_edge": 12544, "longest_edge": 9633792}
CLASS_SIZE = {"shortest_edge": 112 * 112, "longest_edge": 28 * 28 * 15000}
#: A GLM checkpoint's preprocessor_config.json (GLM-4.1V-9B-Thinking's settings).
SHIPPED_PREPROCESSOR: dict[str, Any] = {
    "image_processor_type": "Glm4vImageProcessor",
    "processor_class": "Glm4vProcessor",
    "size": SHIPPED_SIZE,
    "do_rescale": True,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
}


def pil_class(model_type: str) -> Any:
    """The PIL-backend class transformers uses for ``model_type``."""
    if model_type == "glm46v":
        from transformers.models.glm46v.image_processing_pil_glm46v import (
            Glm46VImageProcessorPil,
        )

        return Glm46VImageProcessorPil
    from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil

    return Glm4vImageProcessorPil


def hf_image_processor(model_type: str = "glm4v", **kw: Any) -> Any:
    kw.setdefault("size", SHIPPED_SIZE)
    return pil_class(model_type)(**kw)


def processor(model_type: str = "glm4v", **kw: Any) -> Any:
    """The model type's ``ProcessorMixin`` on the PIL image processor and the local tokenizer,
    without a video processor (its class check is skipped for that)."""
    from transformers import ProcessorMixin

    if model_type == "glm46v":
        from transformers.models.glm46v.processing_glm46v import Glm46VProcessor as cls
    else:
        from transformers.models.glm4v.processing_glm4v import Glm4vProcessor as cls
    with mock.patch.object(ProcessorMixin, "check_argument_for_proper_class", lambda *a: None):
        return cls(hf_image_processor(model_type, **kw), hf_tokenizer(model_type), None)


def hf_pixels(proc: Any, image: Image.Image) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """``(pixel_values, image_grid_thw)`` of an image processor for one image."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = proc(images=[image], return_tensors="np")
    return np.asarray(out["pixel_values"]), np.asarray(out["image_grid_thw"])


def photo(name: str) -> Image.Image:
    """A corpus photo as HF's ``load_image`` + ``convert_to_rgb`` gives it (RGB, alpha on
    white, EXIF orientation applied)."""
    with Image.open(SKIMAGE_DATA / name) as im:
        im.load()
        return hf_rgb(im)


def noise(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8), "RGB")


def encode(image: Image.Image, fmt: str = "PNG", **kw: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **kw)
    return buf.getvalue()


def as_bits(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    a = np.ascontiguousarray(a)
    assert a.dtype == np.float32, a.dtype
    return a.view(np.uint32)
