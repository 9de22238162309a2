"""`spec_from_hf`: a `qwen_vl` spec from a HuggingFace model directory's
`preprocessor_config.json` and `config.json`. Every setting HF's Qwen2-VL image processor
reads is either mapped exactly or refused with a `SpecError` naming it; nothing is
approximated."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sglang_mm_core.plugin import CLIP_MEAN, CLIP_STD, ModelDir, SpecError, check_hf_settings

from .params import QwenVLParams
from .timestamps import TOKENIZER_FILE

MODEL_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")
PROCESSOR_TYPES = (
    "Qwen2VLImageProcessor",
    "Qwen2VLImageProcessorFast",
    "Qwen2VLImageProcessorPil",
    "Qwen2_5_VLImageProcessor",
)

# HF's class defaults (Qwen2VLImageProcessor), used where the file is silent, as HF does.
_DEFAULTS: dict[str, Any] = {
    "patch_size": 14,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "min_pixels": 56 * 56,
    "max_pixels": 28 * 28 * 1280,
    "image_mean": CLIP_MEAN,
    "image_std": CLIP_STD,
}

# Settings that must hold this value (or be absent / null) for the output to be exact.
_REQUIRED: dict[str, Any] = {
    "do_resize": True,
    "do_rescale": True,
    "do_normalize": True,
    "do_convert_rgb": True,
}
_MUST_BE_OFF = ("do_center_crop", "do_pad", "do_reduce_labels")
# Keys that do not change this processor's pixels, beyond the core's HF_INERT_KEYS.
_INERT = {
    "feature_extractor_type",
    "default_to_square",
    "crop_size",
    "pad_size",
    "image_seq_length",
    # video-only settings
    "video_processor_type",
    "fps",
    "min_frames",
    "max_frames",
    "num_frames",
    "do_sample_frames",
    "video_metadata",
    "return_metadata",
}
_HANDLED = {
    *_REQUIRED,
    *_MUST_BE_OFF,
    "patch_size",
    "merge_size",
    "temporal_patch_size",
    "min_pixels",
    "max_pixels",
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


def _pixels(pp: Mapping[str, Any]) -> tuple[int, int]:
    """Top-level ``min_pixels`` / ``max_pixels`` win over ``size``'s shortest/longest edge,
    which in this processor are pixel counts, not edges."""
    size = pp.get("size")
    if size is not None and not isinstance(size, dict):
        raise SpecError(f"preprocessor setting size={size!r} must be an object")
    size = dict(size or {})
    extra = set(size) - {"shortest_edge", "longest_edge", "min_pixels", "max_pixels"}
    if extra:
        raise SpecError(
            f"preprocessor setting size has key(s) {sorted(extra)}; this processor only "
            "reads shortest_edge and longest_edge (pixel counts)"
        )
    out = []
    for top, edge in (("min_pixels", "shortest_edge"), ("max_pixels", "longest_edge")):
        if pp.get(top) is not None:
            out.append(pp[top])
        elif size.get(edge) is not None:
            out.append(size[edge])
        elif pp.get("size") is None:
            out.append(_DEFAULTS[top])
        else:
            raise SpecError(f"preprocessor setting size has no {edge} and there is no {top}")
    return out[0], out[1]


def _triple(pp: Mapping[str, Any], key: str) -> Any:
    """A per-channel setting; HF also accepts one number for all three channels."""
    value = pp.get(key)
    if value is None:
        return _DEFAULTS[key]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (value, value, value)
    if isinstance(value, list) and len(value) == 3:
        return tuple(value)
    raise SpecError(f"preprocessor setting {key}={value!r} must be 3 numbers")


def _sub(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    sub = config.get(key)
    return sub if isinstance(sub, dict) else {}


def _token_ids(config: Mapping[str, Any]) -> dict[str, int]:
    """Token ids from config.json: top level first, then the nested text/vision configs."""
    scopes = [config, _sub(config, "text_config"), _sub(config, "vision_config")]
    out: dict[str, int] = {}
    for key in ("image_token_id", "vision_start_token_id", "vision_end_token_id"):
        for scope in scopes:
            if scope.get(key) is not None:
                out[key] = scope[key]
                break
        else:
            raise SpecError(f"config.json has no {key}")
    return out


def _geometry(pp: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, int]:
    """Patch geometry from the preprocessor (what HF's processor uses), checked against the
    vision tower's own config so that a mismatched pair is refused."""
    vision = _sub(config, "vision_config")
    out: dict[str, int] = {}
    for key, vkey in (
        ("patch_size", "patch_size"),
        ("merge_size", "spatial_merge_size"),
        ("temporal_patch_size", "temporal_patch_size"),
    ):
        value = pp.get(key)
        value = _DEFAULTS[key] if value is None else value
        tower = vision.get(vkey)
        if tower is not None and tower != value:
            raise SpecError(
                f"preprocessor {key}={value!r} disagrees with config.json vision_config "
                f"{vkey}={tower!r}"
            )
        out[key] = value
    return out


#: The video rules of each model type (Qwen3.5 follows Qwen3-VL's).
_GENERATION = {
    "qwen2_vl": "qwen2_vl",
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl": "qwen3_vl",
    "qwen3_vl_moe": "qwen3_vl",
    "qwen3_5": "qwen3_vl",
    "qwen3_5_moe": "qwen3_vl",
}


def _video(model_type: str, config: Mapping[str, Any], files: ModelDir) -> dict[str, Any]:
    """The video params config.json states (the generation, the video token, Qwen2.5-VL's
    tokens per second), and for Qwen3-VL / Qwen3.5 the directory's ``tokenizer.json`` (the
    timestamps' tokenizer); the sampling settings keep transformers' video processor
    defaults."""
    generation = _GENERATION[model_type]
    out: dict[str, Any] = {"generation": generation}
    for scope in (config, _sub(config, "text_config"), _sub(config, "vision_config")):
        if scope.get("video_token_id") is not None:
            out["video_token_id"] = scope["video_token_id"]
            break
    tps = _sub(config, "vision_config").get("tokens_per_second")
    if generation == "qwen2_5_vl" and tps is not None:
        out["tokens_per_second"] = tps
    if generation == "qwen3_vl":
        out |= {"video_min_pixels": 128 * 32 * 32, "video_max_pixels": 768 * 32 * 32}
        if files.root is not None and TOKENIZER_FILE in files:
            out["tokenizer"] = str((files.root / TOKENIZER_FILE).resolve())
    return out


def spec_from_hf(
    model: ModelDir | str | Path | Mapping[str, Mapping[str, Any]], *, resample: str = "aten_u8"
) -> dict[str, Any]:
    """A ``qwen_vl`` spec document (``family`` and ``params``) for a Qwen2-VL, Qwen2.5-VL,
    Qwen3-VL or Qwen3.5 model directory (a path, a `ModelDir`, or its parsed files by name).
    The token ids come from ``config.json``, as HF's processor takes them; a Qwen3-VL or Qwen3.5
    directory with a ``tokenizer.json`` names it as the ``tokenizer`` param (the timestamps of
    its videos need it; parsed files carry none). ``resample`` picks
    the backend to match: ``"aten_u8"`` (HF v5's default torchvision backend) or ``"pil"``."""
    files = ModelDir.of(model)
    pp, cfg = files.preprocessor_config, files.config
    model_type = cfg.get("model_type")
    if model_type not in MODEL_TYPES:
        raise SpecError(
            f"config.json model_type {model_type!r} is not a Qwen-VL model "
            f"(expected one of {', '.join(MODEL_TYPES)})"
        )
    kind = pp.get("image_processor_type")
    if kind is not None and kind not in PROCESSOR_TYPES:
        raise SpecError(f"preprocessor image_processor_type {kind!r} is not supported")
    _check_settings(pp)
    min_pixels, max_pixels = _pixels(pp)
    params: dict[str, Any] = {
        **_geometry(pp, cfg),
        "min_pixels": min_pixels,
        "max_pixels": max_pixels,
        "image_mean": _triple(pp, "image_mean"),
        "image_std": _triple(pp, "image_std"),
        **_token_ids(cfg),
        "resample": resample,
        "smart_resize": "hf",
        **_video(model_type, cfg, files),
    }
    try:
        validated = QwenVLParams.model_validate(params)
    except ValidationError as e:
        raise SpecError(f"the model's settings are not a valid qwen_vl spec: {e}") from e
    return {"family": "qwen_vl", "params": validated.model_dump(mode="json")}


__all__ = ["MODEL_TYPES", "spec_from_hf"]
