"""A model's own tokenizer, for the text a family writes inside an item's expansion (a video's
timestamps: Qwen3-VL's ``<1.5 seconds>``, Gemma 4's ``00:01``, GLM-4.5V's, Kimi's). The text must
be tokenized exactly as the reference's tokenizer does, so the family reads the model's
``tokenizer.json`` with the ``tokenizers`` package (the Rust tokenizer transformers' fast
tokenizers wrap); nothing is approximated or downloaded.

A spec names the file in a params field typed `TokenizerPath`: the file is loaded when the spec
is validated (once per resolved path, shared by every family instance naming it), so a bad path
fails the spec, not a request."""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationInfo

from .errors import SpecError

#: The file a model directory keeps its tokenizer in.
TOKENIZER_FILE = "tokenizer.json"
# Texts remembered per tokenizer: a family's texts (timestamps) repeat across requests.
_CACHE_ENTRIES = 65536


class TextTokenizer:
    """A model's ``tokenizer.json``, read with the ``tokenizers`` package: `ids` tokenizes one
    text on its own, with no special tokens added, remembering the texts it has seen.
    Thread-safe; get one with `load_tokenizer`."""

    def __init__(self, path: Path) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as e:
            raise SpecError(
                "a family's text tokens need the 'tokenizers' package "
                "(pip install 'sglang-mm-core[tokenizer]')"
            ) from e
        try:
            self._tokenizer: Any = Tokenizer.from_file(str(path))
        except Exception as e:
            raise SpecError(f"tokenizer {str(path)!r} is not a tokenizer.json: {e}") from None
        #: The resolved ``tokenizer.json`` it was read from.
        self.path = path
        self._cache: dict[str, tuple[int, ...]] = {}
        self._lock = threading.Lock()

    def ids(self, text: str) -> tuple[int, ...]:
        """The token ids of ``text`` alone (no special tokens added)."""
        got = self._cache.get(text)
        if got is None:
            got = tuple(self._tokenizer.encode(text, add_special_tokens=False).ids)
            with self._lock:
                if len(self._cache) < _CACHE_ENTRIES:
                    self._cache[text] = got
        return got

    def token_id(self, token: str) -> int | None:
        """The id of one token of the vocabulary (a special token such as ``<|video|>``), or
        None when the vocabulary has no such token."""
        got = self._tokenizer.token_to_id(token)
        return None if got is None else int(got)

    def __repr__(self) -> str:
        return f"TextTokenizer({str(self.path)!r})"


def tokenizer_file(path: str | os.PathLike[str]) -> Path:
    """The resolved ``tokenizer.json`` that ``path`` names: the file, or a directory holding
    one; a `SpecError` when there is none."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / TOKENIZER_FILE
    if not p.is_file():
        raise SpecError(f"{str(path)!r} is neither a tokenizer.json nor a directory holding one")
    return p.resolve()


@functools.lru_cache(maxsize=16)
def _load(resolved: Path) -> TextTokenizer:
    return TextTokenizer(resolved)


def load_tokenizer(path: str | os.PathLike[str]) -> TextTokenizer:
    """The tokenizer of ``path`` (a ``tokenizer.json`` or its directory), loaded once per
    resolved path and shared. A file changed on disk is not read again: give a new tokenizer a
    new path (a spec's fingerprint holds the path, not the file's contents)."""
    return _load(tokenizer_file(path))


def _loads(value: str, info: ValidationInfo) -> str:
    spec_dir = (info.context or {}).get("spec_dir")
    path = Path(value).expanduser()
    if spec_dir is not None and not path.is_absolute():
        value = str(Path(spec_dir) / path)
    try:
        load_tokenizer(value)
    except SpecError as e:
        raise ValueError(str(e)) from None
    return value


#: A params field naming a model's ``tokenizer.json`` (or its directory), loaded when the spec
#: is validated so that a bad path is a spec error naming the field. In a spec file, a relative
#: path is relative to the file's folder (and is stored resolved against it); elsewhere, to the
#: working directory.
TokenizerPath = Annotated[str, Field(min_length=1), AfterValidator(_loads)]

__all__ = ["TOKENIZER_FILE", "TextTokenizer", "TokenizerPath", "load_tokenizer", "tokenizer_file"]
