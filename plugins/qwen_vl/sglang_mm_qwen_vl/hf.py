"""`spec_from_hf`: a `qwen_vl` spec from a HuggingFace model directory's
`preprocessor_config.json` and `config.json`. Every setting HF's Qwen2-VL image processor
reads is either mapped exactly or refused with a `SpecError` naming it; nothing is
approximated."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sglang_mm_core.plugin import (
    CLIP_MEAN,
    CLIP_STD,
    TOKENIZER_FILE,
    ModelDir,
    SpecError,
    check_hf_settings,
    hf_channels,
    vision_geometry,
)

from .params import QwenVLParams

PREPROCESSOR_CONFIG = "preprocessor_config.json"

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
    """A per-channel setting (the core's `hf_channels`, HF's class default where absent)."""
    return hf_channels(pp, key, _DEFAULTS[key])


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
    vision tower's own config (the core's `vision_geometry`)."""
    keys = {
        "patch_size": ("patch_size", _DEFAULTS["patch_size"]),
        "merge_size": ("spatial_merge_size", _DEFAULTS["merge_size"]),
        "temporal_patch_size": ("temporal_patch_size", _DEFAULTS["temporal_patch_size"]),
    }
    return vision_geometry(pp, config, keys)


#: The video rules of each model type (Qwen3.5 follows Qwen3-VL's).
_GENERATION = {
    "qwen2_vl": "qwen2_vl",
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl": "qwen3_vl",
    "qwen3_vl_moe": "qwen3_vl",
    "qwen3_5": "qwen3_vl",
    "qwen3_5_moe": "qwen3_vl",
}


#: transformers' video processor class defaults (Qwen2VLVideoProcessor, also Qwen2.5-VL's;
#: Qwen3VLVideoProcessor, also Qwen3.5's) where its settings file is silent.
_VIDEO_DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen2": {"do_sample_frames": False, "fps": None, "pixels": (128 * 28 * 28, 768 * 28 * 28)},
    "qwen3": {"do_sample_frames": True, "fps": 2.0, "pixels": (128 * 32 * 32, 768 * 32 * 32)},
}
_VIDEO_INERT = {"video_processor_type", "video_metadata", "return_metadata", "default_to_square"}
_VIDEO_HANDLED = {
    *_HANDLED,
    "do_sample_frames",
    "fps",
    "num_frames",
    "min_frames",
    "max_frames",
    "cap_pixels_per_frame",
    "max_video_tokens",
}
_MAX_VIDEO_TOKENS = 128000  # what the plugin's cap_pixels_per_frame budgets


def _video_sampling(
    generation: str, where: str, vp: Mapping[str, Any], image: Mapping[str, Any]
) -> dict[str, Any]:
    """The sampling and per-frame pixel params of the video processor's settings ``vp`` (from
    ``where``), checked against the image params: the family lays out videos with the image
    processor's patch geometry and table, so settings that differ are refused."""
    rules = _VIDEO_DEFAULTS["qwen3" if generation == "qwen3_vl" else "qwen2"]
    try:
        check_hf_settings(
            vp,
            handled=_VIDEO_HANDLED,
            inert=_INERT | _VIDEO_INERT,
            required=_REQUIRED,
            must_be_off=_MUST_BE_OFF,
        )
        size = vp.get("size")
        if vp.get("min_pixels") is None and vp.get("max_pixels") is None and size is None:
            low, high = rules["pixels"]
        else:
            low, high = _pixels(vp)
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from None
    for key in ("patch_size", "merge_size", "temporal_patch_size"):
        if vp.get(key) is not None and vp[key] != image[key]:
            raise SpecError(
                f"{where}: {key}={vp[key]!r} differs from the image processor's "
                f"{image[key]!r}; this family lays out videos with the image geometry"
            )
    for key in ("image_mean", "image_std"):
        if vp.get(key) is not None and tuple(_triple(vp, key)) != tuple(image[key]):
            raise SpecError(
                f"{where}: {key}={vp[key]!r} differs from the image processor's; this family "
                "normalizes videos with the image table"
            )
    out: dict[str, Any] = {"video_min_pixels": low, "video_max_pixels": high}
    sample = vp.get("do_sample_frames")
    sample = rules["do_sample_frames"] if sample is None else bool(sample)
    if not sample:
        return out | {"video_sampling": "none"}
    fps = vp.get("fps")
    fps = rules["fps"] if fps is None else fps
    num_frames = vp.get("num_frames")
    if num_frames is not None and fps is not None:
        raise SpecError(
            f"{where}: num_frames={num_frames!r} and fps={fps!r} are both set; transformers' "
            "sample_frames refuses them together"
        )
    out |= {"video_sampling": "hf", "video_fps": fps, "video_num_frames": num_frames}
    for key, param in (("min_frames", "video_min_frames"), ("max_frames", "video_max_frames")):
        if vp.get(key) is not None:
            out[param] = vp[key]
    cap = vp.get("cap_pixels_per_frame")
    if cap:
        tokens = vp.get("max_video_tokens")
        if tokens is not None and tokens != _MAX_VIDEO_TOKENS:
            raise SpecError(
                f"{where}: max_video_tokens={tokens!r} is not supported with "
                f"cap_pixels_per_frame (only {_MAX_VIDEO_TOKENS})"
            )
        out["video_cap_pixels_per_frame"] = True
    return out


def _video(
    model_type: str, config: Mapping[str, Any], files: ModelDir, image: Mapping[str, Any]
) -> dict[str, Any]:
    """The video params: what config.json states (the generation, the video token, Qwen2.5-VL's
    tokens per second), the video processor's sampling and pixel settings (as transformers
    finds them, `ModelDir.processor_settings`), and for Qwen3-VL / Qwen3.5 the directory's
    ``tokenizer.json`` (the timestamps' tokenizer)."""
    generation = _GENERATION[model_type]
    out: dict[str, Any] = {"generation": generation}
    for scope in (config, _sub(config, "text_config"), _sub(config, "vision_config")):
        if scope.get("video_token_id") is not None:
            out["video_token_id"] = scope["video_token_id"]
            break
    tps = _sub(config, "vision_config").get("tokens_per_second")
    if generation == "qwen2_5_vl" and tps is not None:
        out["tokens_per_second"] = tps
    where, vp = files.processor_settings("video")
    out |= _video_sampling(generation, where, vp, image)
    if generation == "qwen3_vl":
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
    }
    params |= _video(model_type, cfg, files, params)
    try:
        validated = QwenVLParams.model_validate(params)
    except ValidationError as e:
        raise SpecError(f"the model's settings are not a valid qwen_vl spec: {e}") from e
    return {"family": "qwen_vl", "params": validated.model_dump(mode="json")}


__all__ = ["MODEL_TYPES", "spec_from_hf"]
