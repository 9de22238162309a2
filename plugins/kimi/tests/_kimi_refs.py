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


#: The K3 image text's pieces the K2.5 vocabulary lacks, appended after it (so every K2.5 id
#: stays what the video goldens recorded).
K3_WORDS = ["x"]
#: Kimi K3's tokenizer for the tests and the example spec (examples/kimi_k3/), written by
#: gen_k3_tokenizer.py.
K3_TOKENIZER_JSON = Path(__file__).resolve().parents[3] / "examples" / "kimi_k3" / "tokenizer.json"


def tokenizer_object(*, k3: bool = False) -> Tokenizer:
    """A word-level tokenizer with Kimi's special-token ids and its digit splitting (also
    saved as fixtures/kimi_tokenizer/tokenizer.json by gen_goldens.py, for the spec); with
    ``k3``, the pieces of K3's ``image WxH`` text too."""
    vocab = {w: 1000 + i for i, w in enumerate(WORDS + PIECES + (K3_WORDS if k3 else []))}
    tok = Tokenizer(models.WordLevel({**vocab, **SPECIAL}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(SPLIT), behavior="isolated")
    tok.add_special_tokens(list(SPECIAL))
    return tok


def hf_tokenizer(*, k3: bool = False) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer_object(k3=k3), unk_token="[UNK]", pad_token="[PAD]"
    )


def ids(text: str, *, k3: bool = False) -> list[int]:
    return list(tokenizer_object(k3=k3).encode(text, add_special_tokens=False).ids)


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


# --------------------------------------------------------------------------- Kimi K3

#: moonshotai/Kimi-K3's media_proc_cfg (preprocessor_config.json), image keys.
K3_CFG: dict[str, Any] = {
    "in_patch_limit": 65536,
    "patch_size": 14,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "merge_kernel_size": 2,
    "fixed_output_tokens": None,
    "patch_limit_on_one_side": 512,
    "transparent_bg_config": {
        "pattern": "chessboard",
        "chessboard_square_size": 8,
        "chessboard_square_on_top_left": True,
        "chessboard_white_value": 255,
        "chessboard_gray_value": 180,
    },
    "transparent_bg_fill_stage": "after_resize",
}
#: The dataclass defaults of the checkpoint's TransparentBgConfig.
_BG_DEFAULTS = {
    "pattern": "black",
    "chessboard_square_size": 16,
    "chessboard_square_on_top_left": True,
    "chessboard_white_value": 255,
    "chessboard_gray_value": 200,
}


def _k3_background(h: int, w: int, bg: dict[str, Any]) -> np.ndarray:
    """``_create_chessboard_background`` and the plain patterns of ``fill_transparent_bg_with``."""
    pattern = bg["pattern"]
    if pattern == "white":
        return np.full((h, w, 3), 255, dtype=np.uint8)
    if pattern == "black":
        return np.zeros((h, w, 3), dtype=np.uint8)
    if pattern == "gray":
        return np.full((h, w, 3), 128, dtype=np.uint8)
    square, white, gray = (
        bg["chessboard_square_size"],
        bg["chessboard_white_value"],
        bg["chessboard_gray_value"],
    )
    out = np.ones((h, w, 3), dtype=np.uint8) * white
    odd = 1 if bg["chessboard_square_on_top_left"] else 0
    for y in range(0, h, square):
        for x in range(0, w, square):
            if (y // square + x // square) % 2 == odd:
                out[y : y + square, x : x + square] = gray
    return out


def k3_fill(image: Image.Image, cfg: dict[str, Any] | None) -> Image.Image:
    """``fill_transparent_bg_with`` of Kimi K3's media_utils.py."""
    if cfg is None:
        return image.convert("RGB")
    if image.mode == "RGB":
        return image
    if not ("A" in image.getbands() or "transparency" in image.info):
        return image.convert("RGB")
    bg_cfg = {**_BG_DEFAULTS, **cfg}
    img = np.array(image.convert("RGBA"))
    h, w = img.shape[:2]
    bg = _k3_background(h, w, bg_cfg)
    alpha = img[:, :, 3].astype(np.float32) / 255.0
    alpha_3d = np.stack([alpha] * 3, axis=2)
    result = alpha_3d * img[:, :, :3] + (1 - alpha_3d) * bg
    return Image.fromarray(result.astype(np.uint8))


def k3_resize_config(w: int, h: int, cfg: dict[str, Any]) -> dict[str, int]:
    """The checkpoint's ``get_resize_config``: ``navit_resize_image`` (its asserts included)
    with ``in_patch_limit`` lowered until ``num_tokens <= max_output_tokens``."""
    ps, m = cfg["patch_size"], cfg["merge_kernel_size"]
    side = cfg["patch_limit_on_one_side"]
    max_output_tokens = int(cfg["in_patch_limit"]) // m**2
    limit = int(cfg["in_patch_limit"])
    while True:
        s1 = math.sqrt(limit / (max(1.0, w // ps) * max(1.0, h // ps)))
        scale = min(1.0, s1, side * ps / w, side * ps / h)
        new_w, new_h = max(1, int(w * scale)), max(1, int(h * scale))
        new_w, new_h = min(new_w, side * ps), min(new_h, side * ps)
        factor = m * ps
        pad_h = (factor - new_h % factor) % factor
        pad_w = (factor - new_w % factor) % factor
        if cfg["fixed_output_tokens"] is not None:
            num_tokens = cfg["fixed_output_tokens"]
        else:
            th, tw = (new_h + pad_h) // factor, (new_w + pad_w) // factor
            assert th * m <= side, f"token_height {th} * {m} > {side}"
            assert tw * m <= side, f"token_width {tw} * {m} > {side}"
            num_tokens = th * tw
        ret = {"num_tokens": num_tokens, "new_width": new_w, "new_height": new_h}
        ret |= {"pad_width": pad_w, "pad_height": pad_h}
        if ret["num_tokens"] <= max_output_tokens:
            return ret
        reduced = int(limit * max_output_tokens / ret["num_tokens"])
        limit = min(limit - 1, reduced)


def k3_checkpoint(
    image: Image.Image | bytes, **overrides: Any
) -> tuple[np.ndarray, list[int], int, tuple[int, int]]:
    """``(pixel_values, grid_thw, num_tokens, (width, height) of the image as opened)`` of
    Kimi K3's checkpoint processor for one image (``ensure_media_type``, ``get_resize_config``,
    ``resize_image``: ``image_to_np`` with its fill stage, ``np.pad``; ``normalize``,
    ``navit_patchify``), ``K3_CFG`` with ``overrides``."""
    cfg = {**K3_CFG, **overrides}
    if isinstance(image, bytes):
        image = Image.open(io.BytesIO(image))
    bg, stage = cfg.get("transparent_bg_config"), cfg.get("transparent_bg_fill_stage")
    stage = stage or "before_resize"
    if stage == "before_resize":  # _to_pil(to_rgb=True)
        image = k3_fill(image, bg)
    w, h = image.size
    rc = k3_resize_config(w, h, cfg)
    resized = image.resize((rc["new_width"], rc["new_height"]), resample=Image.Resampling.BICUBIC)
    if stage == "after_resize":
        resized = k3_fill(resized, bg)
    arr = np.asarray(resized)
    arr = np.pad(
        arr,
        ((0, rc["pad_height"]), (0, rc["pad_width"]), (0, 0)),
        mode="constant",
        constant_values=0,
    )
    x = (arr[None] / 255.0).astype(np.float32)
    x -= np.array(cfg["image_mean"])
    x *= 1.0 / np.array(cfg["image_std"])
    ps = cfg["patch_size"]
    t, hh, ww, c = x.shape
    patches = x.reshape(t, hh // ps, ps, ww // ps, ps, c).transpose(0, 1, 3, 5, 2, 4)
    return patches.reshape(-1, c, ps, ps), [t, hh // ps, ww // ps], rc["num_tokens"], (w, h)


def k3_make_image_prompt(width: int, height: int) -> str:
    """The checkpoint's ``make_image_prompt``."""
    return f"<|media_begin|>image {width}x{height}<|media_content|><|media_pad|><|media_end|>"


def k3_expanded_text(text: str, images: list[tuple[tuple[int, int], int]]) -> str:
    """SGLang's ``_expand_k3_image_prompt_text`` over the checkpoint's ``make_image_prompt``:
    each ``<|media_pad|>`` of ``text`` becomes the image's prompt with its pad repeated
    ``num_tokens`` times; ``images`` holds each image's ``((width, height), num_tokens)``."""
    parts = text.split("<|media_pad|>")
    assert len(parts) - 1 == len(images)
    out = [parts[0]]
    for ((w, h), n), rest in zip(images, parts[1:], strict=True):
        out.append(k3_make_image_prompt(w, h).replace("<|media_pad|>", "<|media_pad|>" * n))
        out.append(rest)
    return "".join(out)
