"""Qwen3-VL's (and Qwen3.5's) video timestamps: the ``<t seconds>`` text transformers'
``Qwen3VLProcessor`` writes before every temporal group of a video, and its token ids under the
model's own tokenizer (docs/families/qwen_vl.md, "Video").

- `timestamp_seconds` is ``Qwen3VLProcessor._calculate_timestamps`` (transformers 5.23): the
  sampled frame indices padded to a multiple of ``temporal_patch_size`` with the last index,
  each ``index / fps`` in doubles, then per group the mean of its first and last;
- `timestamp_text` is its format, ``f"<{t:.1f} seconds>"`` (Python's correctly rounded
  decimal of the double, so a tie such as 0.25 goes to even: "0.2");
- `load_tokenizer` reads a ``tokenizer.json`` with the ``tokenizers`` package, once per path.

Each timestamp is tokenized on its own. transformers tokenizes the whole expanded text instead,
but in its 5.23 expansion (``video_markers: "keep"``) every timestamp sits between two special
tokens (the ``<|vision_start|>`` or ``<|vision_end|>`` before it, the ``<|vision_start|>``
after it), and added special tokens split the text before the pre-tokenizer sees it, so the
two are equal for any prompt. Under ``"replace"`` (transformers < 5.10) the first timestamp
follows the prompt's text: equal when that text ends in a special token or a newline, not
after other text (``Video 1: `` then ``<``: HF's ``" <"`` is one token, here two)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sglang_mm_core.plugin import SpecError

#: The file a model directory keeps its tokenizer in.
TOKENIZER_FILE = "tokenizer.json"
#: transformers' fallback when the video's rate is unknown.
FALLBACK_FPS = 24.0


def timestamp_seconds(
    indices: Sequence[int], fps: float | None, temporal_patch_size: int
) -> list[float]:
    """One time per temporal group of the frames ``indices`` of a ``fps`` video (None: 24, as
    transformers assumes), in seconds: ``Qwen3VLProcessor._calculate_timestamps``."""
    rate = FALLBACK_FPS if fps is None else fps
    idx = [int(i) for i in indices]
    if len(idx) % temporal_patch_size != 0:
        idx.extend(idx[-1] for _ in range(temporal_patch_size - len(idx) % temporal_patch_size))
    seconds = [i / rate for i in idx]
    tps = temporal_patch_size
    return [(seconds[i] + seconds[i + tps - 1]) / 2 for i in range(0, len(seconds), tps)]


def timestamp_text(seconds: float) -> str:
    """The text of one timestamp, as ``Qwen3VLProcessor.replace_video_token`` writes it."""
    return f"<{seconds:.1f} seconds>"


class TimestampTokenizer:
    """A model's tokenizer, read from its ``tokenizer.json`` with the ``tokenizers`` package,
    for the timestamp texts: `ids` tokenizes one text on its own (no special tokens added),
    remembering the texts it has seen (a video's timestamps repeat across requests)."""

    def __init__(self, path: Path) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as e:  # a dependency of the plugin, so only a broken install
            raise SpecError(
                "Qwen3-VL video timestamps need the 'tokenizers' package (pip install tokenizers)"
            ) from e
        try:
            self._tokenizer: Any = Tokenizer.from_file(str(path))
        except Exception as e:
            raise SpecError(f"tokenizer {str(path)!r} is not a tokenizer.json: {e}") from None
        self.path = path
        self._cache: dict[str, tuple[int, ...]] = {}
        self._lock = threading.Lock()

    def ids(self, text: str) -> tuple[int, ...]:
        """The token ids of ``text`` alone."""
        got = self._cache.get(text)
        if got is None:
            got = tuple(self._tokenizer.encode(text, add_special_tokens=False).ids)
            with self._lock:
                if len(self._cache) < 65536:
                    self._cache[text] = got
        return got

    def __repr__(self) -> str:
        return f"TimestampTokenizer({str(self.path)!r})"


def tokenizer_file(path: str | os.PathLike[str]) -> Path:
    """The ``tokenizer.json`` a ``tokenizer`` param names: the file, or a directory holding
    one; a `SpecError` naming the param when there is none."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / TOKENIZER_FILE
    if not p.is_file():
        raise SpecError(
            f"params.tokenizer: {str(path)!r} is neither a tokenizer.json nor a "
            f"directory holding one"
        )
    return p.resolve()


@functools.lru_cache(maxsize=16)
def _load(resolved: Path) -> TimestampTokenizer:
    return TimestampTokenizer(resolved)


def load_tokenizer(path: str | os.PathLike[str]) -> TimestampTokenizer:
    """The tokenizer of ``path`` (a ``tokenizer.json`` or its directory), loaded once per
    resolved path and shared by every family instance naming it. A file changed on disk is not
    read again: restart, or name another path."""
    return _load(tokenizer_file(path))


__all__ = [
    "FALLBACK_FPS",
    "TOKENIZER_FILE",
    "TimestampTokenizer",
    "load_tokenizer",
    "timestamp_seconds",
    "timestamp_text",
    "tokenizer_file",
]
