"""Qwen3-VL's (and Qwen3.5's) video timestamps: the ``<t seconds>`` text transformers'
``Qwen3VLProcessor`` writes before every temporal group of a video, and its token ids under the
model's own tokenizer (docs/families/qwen_vl.md, "Video").

- `timestamp_seconds` is ``Qwen3VLProcessor._calculate_timestamps`` (transformers 5.23): the
  sampled frame indices padded to a multiple of ``temporal_patch_size`` with the last index,
  each ``index / fps`` in doubles, then per group the mean of its first and last;
- `timestamp_text` is its format, ``f"<{t:.1f} seconds>"`` (Python's correctly rounded
  decimal of the double, so a tie such as 0.25 goes to even: "0.2");
- the ids of that text come from the model's ``tokenizer.json`` through the core's
  `sglang_mm_core.plugin.load_tokenizer`.

Each timestamp is tokenized on its own. transformers tokenizes the whole expanded text instead,
but in its 5.23 expansion (``video_markers: "keep"``) every timestamp sits between two special
tokens (the ``<|vision_start|>`` or ``<|vision_end|>`` before it, the ``<|vision_start|>``
after it), and added special tokens split the text before the pre-tokenizer sees it, so the
two are equal for any prompt. Under ``"replace"`` (transformers < 5.10) the first timestamp
follows the prompt's text: equal when that text ends in a special token or a newline, not
after other text (``Video 1: `` then ``<``: HF's ``" <"`` is one token, here two)."""

from __future__ import annotations

from collections.abc import Sequence

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


__all__ = ["FALLBACK_FPS", "timestamp_seconds", "timestamp_text"]
