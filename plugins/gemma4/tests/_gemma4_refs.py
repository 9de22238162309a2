"""The references: HF's `Gemma4ImageProcessorPil` and `Gemma4Processor` (installed
transformers), the latter on a tokenizer built here from Gemma 4's real special-token ids, so
nothing downloads. The processor's video processor needs torch, which CI does not install:
it is left out (these tests send no video)."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
from PIL import Image
from tokenizers import Regex, Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, ProcessorMixin
from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor
from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil
from transformers.models.gemma4.processing_gemma4 import Gemma4Processor

# Gemma 4's ids (config.json's boi / eoi / image / video / audio ids).
SPECIAL = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<boi>": 255999, "<eoi>": 258882}
SPECIAL |= {"<|image|>": 258880, "<|video|>": 258884, "<|audio|>": 258881}
SPECIAL |= {"<boa>": 256000, "<eoa>": 258883}
WORDS = ["\n", " ", "Describe", "Compare", "and", "here", "these"]

#: Gemma4ImageProcessor's settings as a google/gemma-4-* checkpoint saves them.
SHIPPED_PREPROCESSOR: dict[str, Any] = {
    "image_processor_type": "Gemma4ImageProcessor",
    "do_convert_rgb": True,
    "do_resize": True,
    "resample": 3,
    "do_rescale": True,
    "rescale_factor": 0.00392156862745098,
    "do_normalize": False,
    "image_mean": [0.0, 0.0, 0.0],
    "image_std": [1.0, 1.0, 1.0],
    "patch_size": 16,
    "max_soft_tokens": 280,
    "pooling_kernel_size": 3,
}


def tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"<unk>": 3, **{w: 1000 + i for i, w in enumerate(WORDS)}, **SPECIAL}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"\n| |[^\s]+"), behavior="isolated")
    names = {"boi_token": "<boi>", "eoi_token": "<eoi>", "image_token": "<|image|>"}
    names |= {"audio_token": "<|audio|>", "boa_token": "<boa>", "eoa_token": "<eoa>"}
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens=names,
    )


def hf_pil(**kw: Any) -> Gemma4ImageProcessorPil:
    return Gemma4ImageProcessorPil(**kw)


def processor(**kw: Any) -> Gemma4Processor:
    """`Gemma4Processor` without its video processor (its class check is skipped for that)."""
    with mock.patch.object(ProcessorMixin, "check_argument_for_proper_class", lambda *a: None):
        return Gemma4Processor(Gemma4AudioFeatureExtractor(), hf_pil(**kw), tokenizer(), None)


def ids(text: str) -> list[int]:
    return tokenizer()(text, add_special_tokens=False)["input_ids"]


def noise(w: int, h: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


def as_bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
