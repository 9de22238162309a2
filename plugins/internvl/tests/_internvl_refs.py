"""Shared test material: the photo corpus (scikit-image's bundled samples, decoded by Pillow),
generated images, the HuggingFace references (GotOcr2 image processors, InternVLProcessor on a
tokenizer built here from the real special-token ids), and the model card's preprocessing
restated on Pillow + numpy."""

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
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)

#: The special tokens of the InternVL 3 tokenizer (`OpenGVLab/InternVL3-*-hf`) and 3.5's.
TOKENS_3 = {"<img>": 151665, "</img>": 151666, "<IMG_CONTEXT>": 151667, "<video>": 151668}
TOKENS_3_5 = {"<img>": 151669, "</img>": 151670, "<IMG_CONTEXT>": 151671, "<video>": 151672}


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
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    return Image.fromarray(arr, "RGB")


def gradient(width: int, height: int) -> Image.Image:
    y, x = np.mgrid[0:height, 0:width]
    r = (x * 255 // max(width - 1, 1)).astype(np.uint8)
    g = (y * 255 // max(height - 1, 1)).astype(np.uint8)
    b = ((x + y) * 7 % 256).astype(np.uint8)
    return Image.fromarray(np.dstack([r, g, b]), "RGB")


def hf_pil_processor(tile: int = 448, min_patches: int = 1, max_patches: int = 12) -> Any:
    """``GotOcr2ImageProcessorPil`` as InternVL 3 / 3.5 ship it (tiling on, as the processor
    asks)."""
    from transformers import GotOcr2ImageProcessorPil

    return GotOcr2ImageProcessorPil(
        size={"height": tile, "width": tile},
        crop_to_patches=True,
        min_patches=min_patches,
        max_patches=max_patches,
        image_mean=list(MEAN),
        image_std=list(STD),
    )


def hf_reference(processor: Any, image: Image.Image) -> tuple[npt.NDArray[Any], list[int]]:
    """``(pixel_values, num_patches)`` of a GotOcr2 processor for one image."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = processor(images=[image], return_tensors="np")
    return np.asarray(out["pixel_values"]), list(np.asarray(out["num_patches"]).tolist())


def tokenizer(tokens: dict[str, int]) -> Any:
    """A word-level fast tokenizer whose special tokens have the real InternVL ids, with the
    attributes ``InternVLProcessor`` reads (no download: the vocabulary is made up, the image
    tokens are the model's)."""
    from tokenizers import AddedToken, Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, **{f"w{i}": i for i in range(1, 50)}, **tokens}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in tokens])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        extra_special_tokens={
            "start_image_token": "<img>",
            "end_image_token": "</img>",
            "context_image_token": "<IMG_CONTEXT>",
            "video_token": "<video>",
        },
    )


def internvl_processor(tokens: dict[str, int], **image_kwargs: Any) -> Any:
    """HF's ``InternVLProcessor`` over the PIL image processor and the local tokenizer."""
    from transformers import InternVLProcessor

    class ImagesOnly(InternVLProcessor):
        """InternVLProcessor unchanged but for its constructor's class check, which looks up
        the video processor class (absent without torchvision): no video processor here."""

        @classmethod
        def get_attributes(cls) -> list[str]:
            return ["image_processor", "tokenizer"]

    return ImagesOnly(
        image_processor=hf_pil_processor(**image_kwargs),
        tokenizer=tokenizer(tokens),
        image_seq_length=256,
    )


def model_card_tiles(
    image: Image.Image, image_size: int = 448, min_num: int = 1, max_num: int = 12
) -> npt.NDArray[np.float32]:
    """The model card's ``load_image`` on an RGB image: ``dynamic_preprocess`` (Pillow's
    default bicubic ``resize`` to the grid canvas, row-major crops, a thumbnail when there is
    more than one tile), then ``T.Resize`` (a no-op on 448-pixel tiles), ``T.ToTensor`` (f32
    divide by 255) and ``T.Normalize`` (f32 subtract, f32 divide), here in numpy float32."""
    w, h = image.size
    aspect = w / h
    ratios = sorted(
        {
            (i, j)
            for n in range(min_num, max_num + 1)
            for i in range(1, n + 1)
            for j in range(1, n + 1)
            if min_num <= i * j <= max_num
        },
        key=lambda x: x[0] * x[1],
    )
    best_diff, best = float("inf"), (1, 1)
    for ratio in ratios:
        diff = abs(aspect - ratio[0] / ratio[1])
        if diff < best_diff:
            best_diff, best = diff, ratio
        elif diff == best_diff and w * h > 0.5 * image_size * image_size * ratio[0] * ratio[1]:
            best = ratio
    tw, th = image_size * best[0], image_size * best[1]
    canvas = image.resize((tw, th))
    tiles = []
    for i in range(best[0] * best[1]):
        x0 = (i % (tw // image_size)) * image_size
        y0 = (i // (tw // image_size)) * image_size
        tiles.append(canvas.crop((x0, y0, x0 + image_size, y0 + image_size)))
    if len(tiles) != 1:
        tiles.append(image.resize((image_size, image_size)))
    arr = np.stack([np.asarray(t) for t in tiles]).astype(np.float32) / np.float32(255)
    arr = (arr - np.asarray(MEAN, dtype=np.float32)) / np.asarray(STD, dtype=np.float32)
    return np.ascontiguousarray(arr.transpose(0, 3, 1, 2))


def as_bits(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """float32 values as their raw bits, so equality is bit equality."""
    a = np.ascontiguousarray(a)
    assert a.dtype == np.float32, a.dtype
    return a.view(np.uint32)
