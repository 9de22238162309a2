"""`spec_from_hf` for GLM-4.1V (``glm4v``), GLM-4.5V (``glm4v_moe``) and GLM-4.6V (``glm46v``):
a model directory's image and video processor settings (where transformers finds them:
`ModelDir.processor_settings`), the processor class
(which writes the timestamps), ``config.json``'s token ids and vision geometry, and the
directory's ``tokenizer.json`` (for the timestamps). Every setting is mapped exactly or refused
with a `SpecError` naming it; nothing is approximated."""

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

from .params import GLM4V, GLM4V_MOE, GLM46V, Glm4vParams

PROCESSOR_CONFIG = "processor_config.json"
MODEL_TYPES = ("glm4v", "glm4v_moe", "glm46v")
#: Each model type's preset, and the processor classes transformers 5.23 maps it to.
_PRESETS = {"glm4v": GLM4V, "glm4v_moe": GLM4V_MOE, "glm46v": GLM46V}
_GENERATION_OF_CLASS = {
    "Glm4vImageProcessor": "glm4v",
    "Glm4vImageProcessorPil": "glm4v",
    "Glm4vImageProcessorFast": "glm4v",
    "Glm46VImageProcessor": "glm46v",
    "Glm46VImageProcessorPil": "glm46v",
    "Glm46VImageProcessorFast": "glm46v",
    "Glm4vVideoProcessor": "glm4v",
    "Glm46VVideoProcessor": "glm46v",
    "Glm4vProcessor": "glm4v",
    "Glm46VProcessor": "glm46v",
}
_DEFAULT_GENERATION = {"glm4v": "glm4v", "glm4v_moe": "glm4v", "glm46v": "glm46v"}
BICUBIC = 3

# Settings that must hold this value (or be absent / null) for the output to be exact.
_REQUIRED: dict[str, Any] = {
    "do_resize": True,
    "do_rescale": True,
    "do_normalize": True,
    "do_convert_rgb": True,
}
_MUST_BE_OFF = ("do_center_crop", "do_pad")
# Keys no GLM image processor reads (beyond the core's HF_INERT_KEYS).
_INERT = {"default_to_square", "crop_size", "pad_size", "image_seq_length", "video_processor_type"}
_HANDLED = {
    *_REQUIRED,
    *_MUST_BE_OFF,
    "patch_size",
    "merge_size",
    "temporal_patch_size",
    "size",
    "image_mean",
    "image_std",
    "resample",
    "rescale_factor",
}
_VIDEO_HANDLED = {*_HANDLED, "do_sample_frames", "fps", "max_duration", "num_frames"}
_VIDEO_INERT = {
    *_INERT,
    "video_metadata",
    "return_metadata",
    # read by no GLM video processor in transformers 5.23
    "max_image_size",
    "min_frames",
    "max_frames",
}


def check_settings(pp: Mapping[str, Any]) -> None:
    """Refuse, naming the key, image processor settings the family cannot reproduce: the rule
    of `spec_from_hf` and of the transformers drop-ins' construction."""
    check_hf_settings(
        pp,
        handled=_HANDLED,
        inert=_INERT,
        required=_REQUIRED,
        must_be_off=_MUST_BE_OFF,
        resample=BICUBIC,
    )


def pixels(pp: Mapping[str, Any], where: str, default: tuple[int, int]) -> tuple[int, int]:
    """``size``'s ``shortest_edge`` / ``longest_edge`` (pixel counts, not edges), both of which
    GLM's processors require; the class defaults when the file has no ``size``."""
    size = pp.get("size")
    if size is None:
        return default
    if not isinstance(size, Mapping):
        raise SpecError(f"{where}: size={size!r} must be an object")
    extra = set(size) - {"shortest_edge", "longest_edge"}
    if extra:
        raise SpecError(
            f"{where}: size has key(s) {sorted(extra)}; GLM's processors read only "
            "shortest_edge and longest_edge (pixel counts)"
        )
    lo, hi = size.get("shortest_edge"), size.get("longest_edge")
    if not lo or not hi:
        raise SpecError(
            f"{where}: size must hold shortest_edge and longest_edge (HF refuses it), got {size}"
        )
    return lo, hi


def _sub(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    sub = config.get(key)
    return dict(sub) if isinstance(sub, Mapping) else {}


# (param, config.json key, the token's text as GLM's tokenizer spells it)
_TOKENS = (
    ("image_token_id", "image_token_id", "<|image|>"),
    ("video_token_id", "video_token_id", "<|video|>"),
    ("image_start_token_id", "image_start_token_id", "<|begin_of_image|>"),
    ("image_end_token_id", "image_end_token_id", "<|end_of_image|>"),
    ("video_start_token_id", "video_start_token_id", "<|begin_of_video|>"),
    ("video_end_token_id", "video_end_token_id", "<|end_of_video|>"),
)


def _token_ids(files: ModelDir, model_type: str) -> dict[str, int]:
    """The ids from ``config.json`` (the model's, top level then ``text_config``; the config
    class's defaults where absent), each checked against the tokenizer's id of its token when
    the directory has one: ``Glm4vProcessor`` expands with the tokenizer's ids, the model looks
    for ``config.json``'s."""
    cfg = files.config
    defaults = Glm4vParams.model_validate(_PRESETS[model_type])
    added = files.added_tokens()
    out: dict[str, int] = {}
    for param, key, token in _TOKENS:
        value = cfg.get(key)
        if value is None:
            value = _sub(cfg, "text_config").get(key)
        if value is None:
            value = getattr(defaults, param)
        if not isinstance(value, int) or isinstance(value, bool):
            raise SpecError(f"config.json {key}={value!r} must be an integer token id")
        if token in added and added[token] != value:
            raise SpecError(
                f"config.json {key} {value} disagrees with the tokenizer's {token} = "
                f"{added[token]} (the processor would expand the prompt with {added[token]})"
            )
        out[param] = value
    return out


#: The patch geometry: image processor key -> (vision_config key, HF's default).
_GEOMETRY = {
    "patch_size": ("patch_size", 14),
    "merge_size": ("spatial_merge_size", 2),
    "temporal_patch_size": ("temporal_patch_size", 2),
}


def _generation(kind: Any, where: str, default: str) -> str:
    """``glm4v`` or ``glm46v`` from a processor class name (``default`` when unnamed)."""
    if kind is None:
        return default
    found = _GENERATION_OF_CLASS.get(str(kind))
    if found is None:
        raise SpecError(f"{where}: {kind!r} is not a GLM-4.xV processor class")
    return found


def _video(files: ModelDir, image: Mapping[str, Any], default_generation: str) -> dict[str, Any]:
    """The video params from the video processor's settings, checked against the image ones
    (the family lays videos out with the image geometry and table)."""
    where, vp = files.processor_settings("video")
    sampling = _generation(vp.get("video_processor_type"), where, default_generation)
    try:
        check_hf_settings(
            vp,
            handled=_VIDEO_HANDLED,
            inert=_VIDEO_INERT,
            required={**_REQUIRED, "do_sample_frames": True},
            must_be_off=_MUST_BE_OFF,
            resample=BICUBIC,
        )
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from None
    for key in ("patch_size", "merge_size", "temporal_patch_size"):
        if vp.get(key) is not None and vp[key] != image[key]:
            raise SpecError(
                f"{where}: {key}={vp[key]!r} differs from the image processor's "
                f"{image[key]!r}; this family lays out videos with the image geometry"
            )
    for key, default in (("image_mean", CLIP_MEAN), ("image_std", CLIP_STD)):
        if hf_channels(vp, key, default) != tuple(image[key]):
            raise SpecError(
                f"{where}: {key}={vp.get(key)!r} differs from the image processor's; this "
                "family normalizes videos with the image table"
            )
    if vp.get("num_frames") is not None:
        raise SpecError(
            f"{where}: num_frames={vp['num_frames']!r} is read by no GLM sampler; refused "
            "rather than ignored"
        )
    low, high = pixels(vp, where, (112 * 112, 28 * 28 * 2 * 30000))
    out: dict[str, Any] = {
        "video_sampling": sampling,
        "video_min_pixels": low,
        "video_max_pixels": high,
    }
    if sampling == "glm4v":
        for key, param in (("fps", "video_fps"), ("max_duration", "video_max_duration")):
            if vp.get(key) is not None:
                out[param] = vp[key]
    # Glm46VVideoProcessor keeps fps and max_duration as settings but its sampler reads
    # neither (it picks its rate from the duration): inert there, as in HF.
    return out


def spec_from_hf(
    model: ModelDir | str | Path | Mapping[str, Mapping[str, Any]], *, resample: str = "aten_u8"
) -> dict[str, Any]:
    """A ``glm4v`` spec document for a GLM-4.1V, GLM-4.5V or GLM-4.6V model directory (a path,
    a `ModelDir`, or its parsed files by name). ``resample`` picks the image backend to match:
    ``"aten_u8"`` (HF v5's default torchvision backend, and SGLang's) or ``"pil"``. A directory
    with a ``tokenizer.json`` names it as the ``tokenizer`` param (the video timestamps need
    it)."""
    files = ModelDir.of(model)
    cfg = files.config
    model_type = cfg.get("model_type")
    if model_type not in MODEL_TYPES:
        raise SpecError(
            f"config.json model_type {model_type!r} is not a GLM-4.xV model "
            f"(expected one of {', '.join(MODEL_TYPES)})"
        )
    where, pp = files.processor_settings("image")
    default = _DEFAULT_GENERATION[model_type]
    _generation(pp.get("image_processor_type"), where, default)
    try:
        check_settings(pp)
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from None
    min_pixels, max_pixels = pixels(pp, where, (112 * 112, 28 * 28 * 15000))
    params: dict[str, Any] = {
        **vision_geometry(pp, cfg, _GEOMETRY),
        "min_pixels": min_pixels,
        "max_pixels": max_pixels,
        "image_mean": hf_channels(pp, "image_mean", CLIP_MEAN),
        "image_std": hf_channels(pp, "image_std", CLIP_STD),
        "resample": resample,
        **_token_ids(files, model_type),
    }
    params |= _video(files, params, default)
    proc = files.get(PROCESSOR_CONFIG) or {}
    kind = proc.get("processor_class") or pp.get("processor_class")
    params["timestamps"] = _generation(kind, "processor_class", default)
    if files.root is not None and TOKENIZER_FILE in files:
        params["tokenizer"] = str((files.root / TOKENIZER_FILE).resolve())
    try:
        validated = Glm4vParams.model_validate(params)
    except ValidationError as e:
        raise SpecError(f"the model's settings are not a valid glm4v spec: {e}") from e
    return {"family": "glm4v", "params": validated.model_dump(mode="json")}


__all__ = ["BICUBIC", "MODEL_TYPES", "check_settings", "pixels", "spec_from_hf"]
