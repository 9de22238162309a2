"""Shared test material: the photo corpus (scikit-image's bundled samples), generated images,
the two published parameter sets, and the HuggingFace references (``PixtralImageProcessorPil``
and ``PixtralProcessor`` on a tokenizer built here from the real special-token ids)."""

from __future__ import annotations

import os
import sys
import types
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
IMG, IMG_BREAK, IMG_END = 10, 12, 13

# (our params, what PixtralProcessor hands PixtralImageProcessorPil for them)
PIXTRAL_12B = ({}, {"patch_size": 16, "size": {"longest_edge": 1024}})
MISTRAL3 = (
    {"patch_size": 14, "spatial_merge_size": 2, "longest_edge": 1540},
    {"patch_size": 28, "size": {"longest_edge": 1540}},
)
MODELS = {"pixtral_12b": PIXTRAL_12B, "mistral3": MISTRAL3}


def photo(name: str) -> Image.Image:
    """A corpus photo as HF's ``load_image`` + ``convert_to_rgb`` gives it (alpha on white)."""
    with Image.open(SKIMAGE_DATA / name) as im:
        im.load()
        if im.mode in ("RGBA", "LA") or "transparency" in im.info:
            rgba = im.convert("RGBA")
            white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            return Image.alpha_composite(white, rgba).convert("RGB")
        return im.convert("RGB")


def noise(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8), "RGB")


def gradient(width: int, height: int) -> Image.Image:
    """A smooth image, where resampling errors show as structured differences."""
    y, x = np.mgrid[0:height, 0:width]
    r = (x * 255 // max(width - 1, 1)).astype(np.uint8)
    g = (y * 255 // max(height - 1, 1)).astype(np.uint8)
    b = ((x + y) * 7 % 256).astype(np.uint8)
    return Image.fromarray(np.dstack([r, g, b]), "RGB")


def hf_pil_processor(hf_kwargs: dict[str, Any]) -> Any:
    from transformers import PixtralImageProcessorPil

    return PixtralImageProcessorPil(**hf_kwargs)


def hf_pil(processor: Any, images: list[Image.Image]) -> tuple[list[npt.NDArray[Any]], Any]:
    """Per image, HF's unpadded ``pixel_values`` ``[3, H, W]``, and the ``image_sizes``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = processor(images=images, return_tensors="np")
    sizes = np.asarray(out["image_sizes"])
    values = np.asarray(out["pixel_values"])
    return [values[k][:, :h, :w] for k, (h, w) in enumerate(sizes)], sizes


def _pixtral_processor_class() -> Any:
    """``PixtralProcessor`` without torch. Its module imports one pure function from the
    torchvision image processor module, which needs torch; that function is the same as the PIL
    module's (``get_resize_output_image_size``), so the PIL module's is put in its place. The
    processor's own code (``replace_image_token``, ``__call__``) runs unchanged."""
    try:
        from transformers.models.pixtral.processing_pixtral import PixtralProcessor
    except ImportError:
        import transformers.models.pixtral.image_processing_pil_pixtral as pil_mod

        name = "transformers.models.pixtral.image_processing_pixtral"
        stub = types.ModuleType(name)
        stub.get_resize_output_image_size = pil_mod.get_resize_output_image_size  # type: ignore[attr-defined]
        sys.modules[name] = stub
        sys.modules.pop("transformers.models.pixtral.processing_pixtral", None)
        from transformers.models.pixtral.processing_pixtral import PixtralProcessor
    return PixtralProcessor


TEXT = {"<unk>": 0, "<s>": 1, "</s>": 2, "[INST]": 3, "[/INST]": 4, "hello": 100, "world": 101}


def local_tokenizer() -> Any:
    """A word-level tokenizer holding the real Pixtral / Mistral 3 special ids (Tekken's
    ``[IMG]`` 10, ``[IMG_BREAK]`` 12, ``[IMG_END]`` 13) and a few words; nothing downloaded."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {**TEXT, "[IMG]": IMG, "[IMG_BREAK]": IMG_BREAK, "[IMG_END]": IMG_END}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="<unk>",
        additional_special_tokens=["[IMG]", "[IMG_BREAK]", "[IMG_END]"],
    )


def hf_processor(params: dict[str, Any], hf_kwargs: dict[str, Any]) -> Any:
    """``PixtralProcessor`` as the model repository configures it for these params."""
    image_processor = hf_pil_processor({**hf_kwargs, "patch_size": params.get("patch_size", 16)})
    return _pixtral_processor_class()(
        image_processor=image_processor,
        tokenizer=local_tokenizer(),
        patch_size=params.get("patch_size", 16),
        spatial_merge_size=params.get("spatial_merge_size", 1),
    )


def as_bits(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """float32 values as raw bits, so equality is bit equality."""
    a = np.ascontiguousarray(a)
    assert a.dtype == np.float32, a.dtype
    return a.view(np.uint32)
