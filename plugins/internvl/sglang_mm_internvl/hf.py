"""`spec_from_hf`: an `internvl` spec from a HuggingFace InternVL model directory (``-hf``
checkpoints): ``preprocessor_config.json`` and ``config.json``, plus, when the directory holds
them, ``processor_config.json`` (``image_seq_length``) and the tokenizer files (the ``<img>``
and ``</img>`` ids). Every setting the GotOcr2 image processor reads is mapped exactly or
refused with a `SpecError` naming it; nothing is approximated."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sglang_mm_core.plugin import ModelDir, SpecError, check_hf_settings, hf_channels

from .params import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD, InternVLParams

MODEL_TYPES = ("internvl",)
PROCESSOR_TYPES = ("GotOcr2ImageProcessor", "GotOcr2ImageProcessorFast", "GotOcr2ImageProcessorPil")

#: ``<IMG_CONTEXT>`` id -> the ``<img>``, ``</img>`` ids of the shipped tokenizers (InternVL 3 on
#: Qwen2.5's vocabulary, InternVL 3.5 on Qwen3's), used when no tokenizer file is at hand.
KNOWN_MARKERS: dict[int, tuple[int, int]] = {151667: (151665, 151666), 151671: (151669, 151670)}
#: The files whose added tokens `ModelDir.added_tokens` reads.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
#: ``InternVLProcessor``'s token attributes and the names the shipped tokenizers give them.
TOKEN_NAMES = {
    "context_image_token": "<IMG_CONTEXT>",
    "start_image_token": "<img>",
    "end_image_token": "</img>",
}

_REQUIRED: dict[str, Any] = {
    "do_resize": True,
    "do_rescale": True,
    "do_normalize": True,
    "do_convert_rgb": True,
}
_MUST_BE_OFF = ("do_center_crop", "do_pad")
# Keys that do not change this processor's pixels, beyond the core's HF_INERT_KEYS.
_INERT = {
    "feature_extractor_type",
    "default_to_square",
    "crop_size",
    "image_seq_length",
    # InternVLProcessor always calls the image processor with crop_to_patches=True, whatever
    # the file says (its images_kwargs default), so the file's value does not decide the output.
    "crop_to_patches",
}
_HANDLED = {
    *_REQUIRED,
    *_MUST_BE_OFF,
    "size",
    "min_patches",
    "max_patches",
    "image_mean",
    "image_std",
    "resample",
    "rescale_factor",
}


def _check_settings(pp: Mapping[str, Any]) -> None:
    check_hf_settings(
        pp, handled=_HANDLED, inert=_INERT, required=_REQUIRED, must_be_off=_MUST_BE_OFF
    )


def _tile_size(pp: Mapping[str, Any]) -> int:
    size = pp.get("size")
    if size is None:
        return 448
    if not isinstance(size, dict) or set(size) != {"height", "width"}:
        raise SpecError(f"preprocessor setting size={size!r} must be {{height, width}}")
    if size["height"] != size["width"]:
        raise SpecError(
            f"preprocessor setting size={size!r} is not square; only square tiles are supported"
        )
    return int(size["height"])


def _side(value: Any, what: str) -> int:
    if isinstance(value, list) and len(value) == 2 and value[0] == value[1]:
        value = value[0]
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpecError(f"config.json vision_config {what}={value!r} is not one square size")
    return value


def _seq_length(config: Mapping[str, Any], tile: int) -> int:
    """Tokens per tile as the model computes them: ``(image_size / patch_size)^2 *
    downsample_ratio^2``, with the tower's image size checked against the tile size."""
    sub = config.get("vision_config")
    vision: Mapping[str, Any] = sub if isinstance(sub, dict) else {}
    image_size = _side(vision.get("image_size", 448), "image_size")
    patch = _side(vision.get("patch_size", 14), "patch_size")
    if image_size != tile:
        raise SpecError(
            f"preprocessor tile size {tile} disagrees with config.json vision_config "
            f"image_size {image_size}"
        )
    ratio = config.get("downsample_ratio", 0.5)
    tokens = (image_size // patch) ** 2 * ratio**2
    if image_size % patch or not math.isfinite(tokens) or tokens != int(tokens) or tokens < 1:
        raise SpecError(
            f"config.json image_size {image_size}, patch_size {patch} and downsample_ratio "
            f"{ratio} do not give a whole number of tokens per tile"
        )
    return int(tokens)


def _marker_ids(image_token_id: int, files: ModelDir) -> tuple[int, int]:
    """The ``<img>`` and ``</img>`` ids: from the tokenizer files' added tokens (under the
    names ``tokenizer_config.json``'s ``extra_special_tokens`` gives them, as
    ``InternVLProcessor`` reads them), else, for a directory with no tokenizer file, from the
    shipped tokenizers' table."""
    if not any(name in files for name in TOKENIZER_FILES):
        known = KNOWN_MARKERS.get(image_token_id)
        if known is None:
            raise SpecError(
                f"image_token_id {image_token_id} is not a shipped InternVL tokenizer's and the "
                "model has no tokenizer file (tokenizer.json or tokenizer_config.json) naming "
                "<img> and </img>"
            )
        return known
    tokens = files.added_tokens()
    extra = (files.get("tokenizer_config.json") or {}).get("extra_special_tokens")
    named = dict(TOKEN_NAMES)
    if isinstance(extra, dict):
        named.update((k, v) for k, v in extra.items() if k in named and isinstance(v, str))
    context, start, end = (
        named[k] for k in ("context_image_token", "start_image_token", "end_image_token")
    )
    ctx = tokens.get(context)
    if ctx is not None and ctx != image_token_id:
        raise SpecError(
            f"the tokenizer has {context} = {ctx}, config.json image_token_id = {image_token_id}"
        )
    missing = [t for t in (start, end) if t not in tokens]
    if missing:
        raise SpecError(f"the tokenizer files have no id for {' and '.join(missing)}")
    return tokens[start], tokens[end]


def spec_from_hf(
    model: ModelDir | str | Path | Mapping[str, Mapping[str, Any]], *, resample: str = "aten_u8"
) -> dict[str, Any]:
    """An ``internvl`` spec document for an InternVL 3 / 3.5 ``-hf`` model directory (its
    ``processor_config.json`` and tokenizer files are optional). ``resample`` picks the
    backend to match: ``"aten_u8"`` (HF's default torchvision backend) or ``"pil"``."""
    files = ModelDir.of(model)
    pp, cfg = files.preprocessor_config, files.config
    if cfg.get("model_type") not in MODEL_TYPES:
        raise SpecError(
            f"config.json model_type {cfg.get('model_type')!r} is not an InternVL model "
            "(expected internvl, the -hf checkpoints)"
        )
    kind = pp.get("image_processor_type")
    if kind is not None and kind not in PROCESSOR_TYPES:
        raise SpecError(f"preprocessor image_processor_type {kind!r} is not supported")
    _check_settings(pp)
    tile = _tile_size(pp)
    seq = _seq_length(cfg, tile)
    processor_config = files.get("processor_config.json") or {}
    stated = processor_config.get("image_seq_length", seq)
    if stated != seq:
        raise SpecError(
            f"processor_config.json image_seq_length {stated} disagrees with config.json "
            f"({seq} tokens per tile)"
        )
    image_token_id = cfg.get("image_token_id")
    if not isinstance(image_token_id, int) or isinstance(image_token_id, bool):
        raise SpecError("config.json has no image_token_id")
    start, end = _marker_ids(image_token_id, files)
    params: dict[str, Any] = {
        "tile_size": tile,
        "crop_to_patches": True,
        "min_patches": pp.get("min_patches", 1),
        "max_patches": pp.get("max_patches", 12),
        "image_mean": hf_channels(pp, "image_mean", IMAGENET_DEFAULT_MEAN),
        "image_std": hf_channels(pp, "image_std", IMAGENET_DEFAULT_STD),
        "image_seq_length": seq,
        "image_token_id": image_token_id,
        "start_image_token_id": start,
        "end_image_token_id": end,
        "resample": resample,
        "tiling": "hf",
    }
    try:
        validated = InternVLParams.model_validate(params)
    except ValidationError as e:
        raise SpecError(f"the model's settings are not a valid internvl spec: {e}") from e
    return {"family": "internvl", "params": validated.model_dump(mode="json")}


__all__ = ["KNOWN_MARKERS", "MODEL_TYPES", "spec_from_hf"]
