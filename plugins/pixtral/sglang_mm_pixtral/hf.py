"""`spec_from_hf`: a `pixtral` spec from a HuggingFace Pixtral or Mistral 3 model's files.

``preprocessor_config.json`` gives the resize and normalize, ``config.json`` the image token
and (Mistral 3) ``spatial_merge_size``, ``processor_config.json`` the merge size HF's
``PixtralProcessor`` uses, and ``tokenizer.json`` / ``tokenizer_config.json`` the ids of
``[IMG_BREAK]`` and ``[IMG_END]``. Every setting HF's Pixtral image processor reads is mapped
exactly or refused with a `SpecError` naming it; nothing is approximated."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sglang_mm_core.plugin import (
    CLIP_MEAN,
    CLIP_STD,
    ModelDir,
    SpecError,
    check_hf_settings,
    hf_channels,
)

from .params import PixtralParams

MODEL_TYPES = ("llava", "mistral3")
PROCESSOR_TYPES = ("PixtralImageProcessor", "PixtralImageProcessorFast", "PixtralImageProcessorPil")
# Tekken's ids, which every published Pixtral and Mistral 3 checkpoint uses: taken only when
# the image token is Tekken's [IMG] (10) and no tokenizer file says otherwise.
TEKKEN = {"[IMG]": 10, "[IMG_BREAK]": 12, "[IMG_END]": 13}

_REQUIRED = {"do_resize": True, "do_rescale": True, "do_normalize": True, "do_convert_rgb": True}
_MUST_BE_OFF = ("do_center_crop",)
# Keys that do not change this processor's pixels, beyond the core's HF_INERT_KEYS.
_INERT = {
    "default_to_square",
    "crop_size",
    # batching only: each of our features is its own size, HF's unpadded region
    "do_pad",
}
_HANDLED = {
    *_REQUIRED,
    *_MUST_BE_OFF,
    "patch_size",
    "size",
    "image_mean",
    "image_std",
    "resample",
    "rescale_factor",
}


def _check_settings(pp: Mapping[str, Any]) -> None:
    check_hf_settings(
        pp, handled=_HANDLED, inert=_INERT, required=_REQUIRED, must_be_off=_MUST_BE_OFF
    )


def _side(value: Any, what: str) -> int | None:
    """A square size from ``16`` or ``{"height": 16, "width": 16}``."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, dict) and set(value) <= {"height", "width"} and value:
        h, w = value.get("height"), value.get("width")
        if h == w and isinstance(h, int):
            return h
    raise SpecError(f"{what}={value!r} must be one side or equal height and width")


def _longest_edge(pp: Mapping[str, Any]) -> int:
    size = pp.get("size")
    if size is None:
        return 1024
    if not isinstance(size, dict) or set(size) != {"longest_edge"}:
        raise SpecError(
            f"preprocessor setting size={size!r} is not supported (only {{'longest_edge': n}})"
        )
    return int(size["longest_edge"])


def _agree(name: str, values: dict[str, Any], default: int) -> int:
    found = {where: v for where, v in values.items() if v is not None}
    if len(set(found.values())) > 1:
        raise SpecError(f"{name} disagrees between {found}")
    return next(iter(found.values()), default)


def _special_ids(
    cfg: Mapping[str, Any], proc: Mapping[str, Any], tokens: Mapping[str, int]
) -> dict[str, int]:
    names = {
        "image_token_id": proc.get("image_token", "[IMG]"),
        "image_break_token_id": proc.get("image_break_token", "[IMG_BREAK]"),
        "image_end_token_id": proc.get("image_end_token", "[IMG_END]"),
    }
    image = cfg.get("image_token_index", cfg.get("image_token_id"))
    if image is None:
        image = tokens.get(names["image_token_id"])
    if image is None:
        raise SpecError("config.json has no image_token_index")
    if names["image_token_id"] in tokens and tokens[names["image_token_id"]] != image:
        raise SpecError(
            f"config.json image_token_index {image} disagrees with the tokenizer's "
            f"{names['image_token_id']} = {tokens[names['image_token_id']]}"
        )
    out = {"image_token_id": int(image)}
    for key in ("image_break_token_id", "image_end_token_id"):
        name = names[key]
        if name in tokens:
            out[key] = tokens[name]
        elif not tokens and image == TEKKEN["[IMG]"] and name in TEKKEN:
            out[key] = TEKKEN[name]
        else:
            raise SpecError(f"no id for {name}: pass the tokenizer's added tokens")
    return out


def spec_from_hf(
    model: ModelDir | str | Path | Mapping[str, Mapping[str, Any]], *, resample: str = "pil"
) -> dict[str, Any]:
    """A ``pixtral`` spec document for a Pixtral-12B (``llava`` with a ``pixtral`` tower) or
    Mistral 3 model directory (its ``processor_config.json`` and tokenizer files are
    optional). With no tokenizer file, ``[IMG_BREAK]`` / ``[IMG_END]`` are Tekken's 12 / 13,
    and only when the image token is Tekken's 10. ``resample``: ``"pil"`` or ``"aten_u8"``,
    the HF backend to match."""
    files = ModelDir.of(model)
    pp, cfg = files.preprocessor_config, files.config
    proc: Mapping[str, Any] = files.get("processor_config.json") or {}
    tokens = files.added_tokens()
    model_type = cfg.get("model_type")
    vision = cfg.get("vision_config") if isinstance(cfg.get("vision_config"), dict) else {}
    assert isinstance(vision, dict)
    if model_type not in MODEL_TYPES or (
        model_type == "llava" and vision.get("model_type") != "pixtral"
    ):
        raise SpecError(
            f"config.json model_type {model_type!r} is not Pixtral (llava with a pixtral "
            "vision_config) or mistral3"
        )
    kind = pp.get("image_processor_type")
    if kind is not None and kind not in PROCESSOR_TYPES:
        raise SpecError(f"preprocessor image_processor_type {kind!r} is not supported")
    _check_settings(pp)
    patch = _agree(
        "patch_size",
        {
            "preprocessor_config": _side(pp.get("patch_size"), "preprocessor patch_size"),
            "processor_config": _side(proc.get("patch_size"), "processor patch_size"),
            "config.vision_config": vision.get("patch_size"),
        },
        16,
    )
    merge = _agree(
        "spatial_merge_size",
        {
            "processor_config": proc.get("spatial_merge_size"),
            "config": cfg.get("spatial_merge_size"),
        },
        1,
    )
    params: dict[str, Any] = {
        "patch_size": patch,
        "spatial_merge_size": merge,
        "longest_edge": _longest_edge(pp),
        "image_mean": hf_channels(pp, "image_mean", CLIP_MEAN),
        "image_std": hf_channels(pp, "image_std", CLIP_STD),
        "resample": resample,
        **_special_ids(cfg, proc, tokens),
    }
    try:
        validated = PixtralParams.model_validate(params)
    except ValidationError as e:
        raise SpecError(f"the model's settings are not a valid pixtral spec: {e}") from e
    return {"family": "pixtral", "params": validated.model_dump(mode="json")}


__all__ = ["MODEL_TYPES", "spec_from_hf"]
