"""The references: HF's `Gemma3ImageProcessorPil` and `Gemma3Processor` (installed
transformers), the latter on a tokenizer built here from Gemma 3's real special-token ids, so
nothing downloads."""

from __future__ import annotations

import numpy as np
from PIL import Image
from tokenizers import Regex, Tokenizer, models, pre_tokenizers
from transformers import Gemma3ImageProcessorPil, Gemma3Processor, PreTrainedTokenizerFast

# Gemma 3's ids for the special tokens and the "\n\n" piece.
SPECIAL = {"<pad>": 0, "<bos>": 2, "<start_of_image>": 255999, "<end_of_image>": 256000}
SPECIAL["<image_soft_token>"] = 262144
WORDS = ["\n\n", "\n", " ", "Here", "is", "the", "original", "image", "and", "here", "are"]
WORDS += ["some", "crops", "to", "help", "you", "see", "better", "Describe", "Compare", "these"]


def tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"<unk>": 3, "\n\n": 108, **{w: 1000 + i for i, w in enumerate(WORDS) if w != "\n\n"}}
    vocab.update(SPECIAL)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    # Words, single spaces and newline runs are separate pieces: no merge across a boundary.
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"\n\n|\n| |[^\s]+"), behavior="isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens={
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
            "image_token": "<image_soft_token>",
        },
    )


def hf_pil(pan_and_scan: bool = False, **kw: object) -> Gemma3ImageProcessorPil:
    return Gemma3ImageProcessorPil(
        size={"height": 896, "width": 896},
        resample=Image.Resampling.BILINEAR,
        rescale_factor=1 / 255,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        do_pan_and_scan=pan_and_scan,
        pan_and_scan_min_crop_size=kw.get("min_crop", 256),
        pan_and_scan_max_num_crops=kw.get("max_crops", 4),
        pan_and_scan_min_ratio_to_activate=kw.get("ratio", 1.2),
    )


def processor(pan_and_scan: bool = False) -> Gemma3Processor:
    return Gemma3Processor(hf_pil(pan_and_scan), tokenizer(), image_seq_length=256)


def ids(text: str) -> list[int]:
    return tokenizer()(text, add_special_tokens=False)["input_ids"]


def noise(w: int, h: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


def as_bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
