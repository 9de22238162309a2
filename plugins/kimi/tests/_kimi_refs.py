"""The references the tests compare with, restated where the original cannot run here:

- ``checkpoint_pixels``: the checkpoint's own ``KimiK25VisionProcessor.preprocess`` for one
  image (moonshotai/Kimi-K2.5, ``kimi_k25_vision_processing.py`` and ``media_utils.py``, not
  installable: remote code), step for step with the same Pillow and numpy calls:
  ``convert("RGB")``, ``navit_resize_image``, ``Image.resize(..., BICUBIC)``, ``np.pad`` of the
  uint8 array with 0 on the right and bottom, ``normalize`` (``x / 255.0`` cast to float32,
  ``x -= mean``, ``x *= 1 / std``), ``navit_patchify``. It runs live in CI.
- ``tokenizer``: a tokenizer built here with Kimi's real special-token ids (nothing downloads),
  for ``Kimi_K25Processor`` (transformers).
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from tokenizers import Regex, Tokenizer, models, pre_tokenizers

# moonshotai/Kimi-K2.5's tokenizer (tiktoken.model + tokenizer_config.json).
SPECIAL = {
    "[BOS]": 163584,
    "[EOS]": 163585,
    "<|im_end|>": 163586,
    "<|im_user|>": 163587,
    "<|im_assistant|>": 163588,
    "<|im_system|>": 163594,
    "<|im_middle|>": 163601,
    "<|media_begin|>": 163602,
    "<|media_content|>": 163603,
    "<|media_end|>": 163604,
    "<|media_pad|>": 163605,
    "[UNK]": 163838,
    "[PAD]": 163839,
    # Not one of K2.5's special tokens: an id chosen for these tests (a spec names the model's).
    "<|kimi_k25_video_placeholder|>": 163700,
}
WORDS = ["user", "assistant", "image", "video", "Describe", "Compare", "and", "this", " ", "\n"]
# Kimi's pre-tokenizer splits digits in runs of at most three and punctuation apart from them:
# every such piece of an "HH:MM:SS.mmm" timestamp is in the vocabulary.
PIECES = [":", "."] + [f"{i:0{w}d}" for w in (1, 2, 3) for i in range(10**w)]
SPLIT = r"\p{N}{1,3}|[^\s\p{L}\p{N}]+|\p{L}+|\s"
TOKENIZER_JSON = Path(__file__).parent / "fixtures" / "kimi_tokenizer" / "tokenizer.json"
VIDEO_TOKEN_ID = SPECIAL["<|kimi_k25_video_placeholder|>"]

#: What moonshotai/Kimi-K2.5's chat template writes for one image.
IMAGE_CHUNK = "<|media_begin|>image<|media_content|><|media_pad|><|media_end|>"


def tokenizer_object() -> Tokenizer:
    """A word-level tokenizer with Kimi's special-token ids and its digit splitting (also
    saved as fixtures/kimi_tokenizer/tokenizer.json by gen_goldens.py, for the spec)."""
    vocab = {w: 1000 + i for i, w in enumerate(WORDS + PIECES)}
    tok = Tokenizer(models.WordLevel({**vocab, **SPECIAL}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(SPLIT), behavior="isolated")
    tok.add_special_tokens(list(SPECIAL))
    return tok


def hf_tokenizer() -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer_object(), unk_token="[UNK]", pad_token="[PAD]"
    )


def ids(text: str) -> list[int]:
    return list(tokenizer_object().encode(text, add_special_tokens=False).ids)


def prompt(n_images: int) -> str:
    """A chat prompt as Kimi K2.5's template writes it, with ``n_images`` images."""
    body = " and ".join([IMAGE_CHUNK] * n_images)
    return f"<|im_user|>user<|im_middle|>Describe {body}<|im_end|><|im_assistant|>assistant"


def checkpoint_pixels(
    image: Image.Image | bytes,
    *,
    patch_size: int = 14,
    merge_kernel_size: int = 2,
    in_patch_limit: int = 16384,
    patch_limit_on_one_side: int = 512,
    image_mean: tuple[float, ...] = (0.5, 0.5, 0.5),
    image_std: tuple[float, ...] = (0.5, 0.5, 0.5),
) -> tuple[np.ndarray, list[int]]:
    """``(pixel_values, grid_thw)`` of the checkpoint's processor for one image."""
    if isinstance(image, bytes):
        image = Image.open(io.BytesIO(image))
    image = image.convert("RGB")
    w, h = image.size
    ps = patch_size
    s1 = math.sqrt(in_patch_limit / (max(1.0, w // ps) * max(1.0, h // ps)))
    s2 = patch_limit_on_one_side * ps / w
    s3 = patch_limit_on_one_side * ps / h
    scale = min(1.0, s1, s2, s3)
    new_w, new_h = max(1, int(w * scale)), max(1, int(h * scale))
    new_w = min(new_w, patch_limit_on_one_side * ps)
    new_h = min(new_h, patch_limit_on_one_side * ps)
    factor = merge_kernel_size * ps
    pad_h = (factor - new_h % factor) % factor
    pad_w = (factor - new_w % factor) % factor
    arr = np.asarray(image.resize((new_w, new_h), resample=Image.Resampling.BICUBIC))
    arr = np.pad(arr, ((0, pad_h), (0, pad_w), (0, 0)), mode="constant", constant_values=0)
    x = (arr[None] / 255.0).astype(np.float32)
    x -= np.array(image_mean)
    x *= 1.0 / np.array(image_std)
    t, hh, ww, c = x.shape
    patches = x.reshape(t, hh // ps, ps, ww // ps, ps, c).transpose(0, 1, 3, 5, 2, 4)
    return patches.reshape(-1, c, ps, ps), [t, hh // ps, ww // ps]


def as_bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
