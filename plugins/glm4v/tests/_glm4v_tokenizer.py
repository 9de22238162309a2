"""A tokenizer built here with GLM-4.xV's real special-token ids (nothing downloads), shared by
the tests and the golden generators (which run in a torch venv: this needs only ``tokenizers``
and, for `hf_tokenizer`, transformers).

Its vocabulary is a few words, the digits, ``.`` and ``seconds`` (what the video timestamps
are written with), and the special tokens of GLM's chat template as added tokens with the ids
of the model type's config (Glm4vConfig, Glm4vMoeConfig, Glm46VConfig in transformers 5.23)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The ids every GLM-4.xV tokenizer shares, then each model type's media ids.
COMMON = {
    "<|endoftext|>": 151329,
    "[gMASK]": 151331,
    "<sop>": 151333,
    "<|user|>": 151336,
    "<|assistant|>": 151337,
    "<|begin_of_image|>": 151339,
    "<|end_of_image|>": 151340,
}
MEDIA = {
    "glm4v": {
        "<|image|>": 151343,
        "<|video|>": 151344,
        "<|begin_of_video|>": 151341,
        "<|end_of_video|>": 151342,
    },
    "glm4v_moe": {
        "<|image|>": 151363,
        "<|video|>": 151364,
        "<|begin_of_video|>": 151341,
        "<|end_of_video|>": 151342,
    },
    "glm46v": {
        "<|image|>": 151343,
        "<|video|>": 151344,
        "<|begin_of_video|>": 151361,
        "<|end_of_video|>": 151362,
    },
}
WORDS = ["\n", " ", ".", "seconds", "Describe", "this", "and", "compare", "with", "video"]
WORDS += [str(d) for d in range(10)]
# Digits one by one (GLM's tokenizer splits numbers into digits), words, other characters.
PATTERN = r"\d|\.|\n| |[^\s\d\.<]+|<"


def special(model_type: str) -> dict[str, int]:
    return {**COMMON, **MEDIA[model_type]}


def build(model_type: str) -> Any:
    """The ``tokenizers.Tokenizer`` of ``model_type``'s ids."""
    from tokenizers import AddedToken, Regex, Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, **{w: 100 + i for i, w in enumerate(WORDS)}, **special(model_type)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(PATTERN), behavior="isolated")
    # Added as special tokens (at their vocabulary ids) so that they split the text first.
    tok.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in special(model_type)]
    )
    for text, ident in special(model_type).items():
        assert tok.token_to_id(text) == ident, text
    return tok


def write(model_type: str, folder: Path) -> Path:
    """``folder/tokenizer.json`` for ``model_type``; the path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tokenizer.json"
    build(model_type).save(str(path))
    return path


def hf_tokenizer(model_type: str) -> Any:
    """The same tokenizer as transformers' ``PreTrainedTokenizerFast``."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=build(model_type),
        unk_token="<unk>",
        pad_token="<|endoftext|>",
    )
