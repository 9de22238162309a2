"""``spec_from_hf`` for Kimi K2.5 and Kimi K3: a model directory's image settings and token id
to a spec.

Kimi K3 (``config.json`` model type ``kimi_k3``) has the checkpoint's layout only; its
``media_proc_cfg`` adds ``transparent_bg_config`` and ``transparent_bg_fill_stage``, and its
image text (``image WxH``) needs the directory's ``tokenizer.json`` (or ``tokenizer=``).

Two layouts of Kimi K2.5's ``preprocessor_config.json`` exist:

- the checkpoint's own (moonshotai/Kimi-K2.5, remote code): a ``media_proc_cfg`` section read
  by ``KimiK25VisionProcessor`` (``in_patch_limit``, ``patch_limit_on_one_side``, ...), whose
  reference is the Pillow path: ``resample`` defaults to ``"pil"``;
- transformers' (``image_processor_type: Kimi_K25ImageProcessor``, HF's names), whose class is
  torchvision only: ``resample`` defaults to ``"aten_u8"``, and the spec decodes as HF's
  loaders do (alpha onto white, EXIF applied).

``config.json``'s ``media_placeholder_token_id`` is the image token (cross-checked with the
tokenizer's ``<|media_pad|>`` when the directory has one). What cannot be matched bit for bit
is refused with the reason."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sglang_mm_core import plugin as mm

from .params import MEDIA_PAD_TOKEN_ID, KimiParams

MODEL_TYPES = {"kimi_k25", "kimi_k3"}
PROCESSORS = {"Kimi_K25ImageProcessor", "Kimi_K25ImageProcessorFast", "KimiK25VisionProcessor"}
MEDIA_PAD = "<|media_pad|>"

# The checkpoint's media_proc_cfg: what the image path reads ...
_CKPT_IMAGE = {
    "patch_size",
    "merge_kernel_size",
    "in_patch_limit",
    "patch_limit_on_one_side",
    "image_mean",
    "image_std",
    "fixed_output_tokens",
}
# ... and what only its video path reads (videos are not served by this plugin yet), or names
# the config class: inert for images.
_CKPT_INERT = {
    "in_patch_limit_each_frame",
    "in_patch_limit_video",
    "sample_fps",
    "max_num_frames_each_video",
    "temporal_merge_kernel_size",
    "timestamp_mode",
    "config_type",
}
# Kimi K3's transparent-background compositing: read for a K3 checkpoint only.
_K3_KEYS = {"transparent_bg_config", "transparent_bg_fill_stage"}

# transformers' Kimi_K25ImageProcessor settings this mapping reads; any other key that is not
# one of the core's HF_INERT_KEYS is refused.
_HF_HANDLED = {
    "do_resize",
    "resample",
    "do_rescale",
    "rescale_factor",
    "do_normalize",
    "image_mean",
    "image_std",
    "do_convert_rgb",
    "patch_size",
    "merge_size",
    "max_patches",
    "size",
}
_HF_REQUIRED = {"do_resize": True, "do_rescale": True, "do_normalize": True, "do_convert_rgb": True}


def _int(value: Any, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise mm.SpecError(f"{key}={value!r} must be an integer")
    return value


def _merge(value: Any, key: str) -> int:
    """``merge_kernel_size``: one int, or ``[m, m]`` as the vision config stores it."""
    if isinstance(value, (list, tuple)):
        if len(value) != 2 or value[0] != value[1]:
            raise mm.SpecError(f"{key}={value!r}: only a square merge kernel is supported")
        value = value[0]
    return _int(value, key)


def _checkpoint_params(cfg: Mapping[str, Any], *, k3: bool) -> dict[str, Any]:
    keys = set(cfg)
    found = keys & _K3_KEYS
    if found and not k3:
        raise mm.SpecError(
            f"media_proc_cfg {sorted(found)}: Kimi K3's transparent-background settings in a "
            "Kimi K2.5 checkpoint (config.json model_type kimi_k25), whose processor has none"
        )
    unknown = keys - _CKPT_IMAGE - _CKPT_INERT - (_K3_KEYS if k3 else set())
    if unknown:
        raise mm.SpecError(
            f"media_proc_cfg {sorted(unknown)}: not supported, its effect cannot be "
            "reproduced exactly"
        )
    if cfg.get("fixed_output_tokens") is not None:
        raise mm.SpecError(
            f"media_proc_cfg fixed_output_tokens={cfg['fixed_output_tokens']!r} is not "
            "supported: it fixes the token count apart from the patch grid the pixels make"
        )
    out: dict[str, Any] = {}
    if cfg.get("patch_size") is not None:
        out["patch_size"] = _int(cfg["patch_size"], "patch_size")
    if cfg.get("merge_kernel_size") is not None:
        out["merge_size"] = _merge(cfg["merge_kernel_size"], "merge_kernel_size")
    if cfg.get("in_patch_limit") is not None:
        out["max_patches"] = _int(cfg["in_patch_limit"], "in_patch_limit")
    if cfg.get("patch_limit_on_one_side") is not None:
        side = _int(cfg["patch_limit_on_one_side"], "patch_limit_on_one_side")
        out["size"] = {"max_height": side, "max_width": side}
    for key in ("image_mean", "image_std"):
        if cfg.get(key) is not None:
            out[key] = list(mm.hf_channels(cfg, key, (0.0, 0.0, 0.0)))
    if k3:
        out["generation"] = "k3"
        # The checkpoint's own defaults where a key is absent: no compositing, and the fill
        # stage "before_resize" (ensure_media_type's and the processor's default).
        bg = cfg.get("transparent_bg_config")
        if bg is not None and not isinstance(bg, Mapping):
            raise mm.SpecError(f"media_proc_cfg transparent_bg_config={bg!r} must be an object")
        out["transparent_bg_config"] = None if bg is None else dict(bg)
        stage = cfg.get("transparent_bg_fill_stage")
        out["transparent_bg_fill_stage"] = "before_resize" if stage is None else stage
    return out


def check_settings(pre: Mapping[str, Any]) -> None:
    """Refuse, naming the key, the ``Kimi_K25ImageProcessor`` settings the kernels cannot
    reproduce: the rule of `spec_from_hf` and of the transformers drop-in's construction."""
    mm.check_hf_settings(pre, handled=_HF_HANDLED, required=_HF_REQUIRED, resample=3)


def _hf_params(pre: Mapping[str, Any]) -> dict[str, Any]:
    check_settings(pre)
    out: dict[str, Any] = {}
    for key in ("patch_size", "merge_size", "max_patches"):
        if pre.get(key) is not None:
            out[key] = _int(pre[key], key)
    size = pre.get("size")
    if size is not None:
        if not isinstance(size, Mapping) or set(size) - {"max_height", "max_width"}:
            raise mm.SpecError(f"size={size!r} must hold max_height and max_width only")
        out["size"] = dict(size)
    for key in ("image_mean", "image_std"):
        if pre.get(key) is not None:
            out[key] = list(mm.hf_channels(pre, key, (0.0, 0.0, 0.0)))
    return out


def _vision_agrees(cfg: Mapping[str, Any], params: Mapping[str, Any]) -> None:
    """``config.json``'s ``vision_config`` (what the tower was built with) must agree."""
    vision = cfg.get("vision_config")
    if not isinstance(vision, Mapping):
        return
    for ours, theirs, default in (
        ("patch_size", "patch_size", 14),
        ("merge_size", "merge_kernel_size", 2),
    ):
        tower = vision.get(theirs)
        if tower is None:
            continue
        tower = _merge(tower, f"vision_config.{theirs}")
        if tower != params.get(ours, default):
            raise mm.SpecError(
                f"image processor {ours} {params.get(ours, default)} disagrees with "
                f"config.json vision_config {theirs} {tower}"
            )


VIDEO_PLACEHOLDER = "<|kimi_k25_video_placeholder|>"
# Kimi_K25VideoProcessor's settings: read into the video params, or required to agree with the
# image settings (one patch size, merge and normalize serve both), or inert.
_VIDEO_READ = {
    "fps": "video_fps",
    "max_patches": "video_max_patches",
    "temporal_patch_size": "temporal_patch_size",
}
_VIDEO_SHARED = {"patch_size", "merge_size", "size", "image_mean", "image_std"}
_VIDEO_INERT = {"video_processor_type", "return_metadata", "default_to_square", "crop_size"}
_VIDEO_REQUIRED = {
    "do_resize": True,
    "do_rescale": True,
    "do_normalize": True,
    "do_convert_rgb": True,
    "do_sample_frames": True,
}


def _video_params(files: mm.ModelDir, image: Mapping[str, Any]) -> dict[str, Any]:
    """The video params of transformers' layout: the video processor's settings where
    ``AutoVideoProcessor`` finds them (``ModelDir.processor_settings``: with no file of their
    own, the image processor's ``preprocessor_config.json`` serves the videos too, its
    ``max_patches`` included, as transformers builds ``Kimi_K25VideoProcessor`` from it), the
    tokenizer's ``<|kimi_k25_video_placeholder|>`` id, and the directory's ``tokenizer.json``
    (the chunk timestamps' tokenizer)."""
    out: dict[str, Any] = {}
    where, vp = files.processor_settings("video")
    try:
        mm.check_hf_settings(
            vp,
            handled=set(_VIDEO_READ)
            | _VIDEO_SHARED
            | set(_VIDEO_REQUIRED)
            | _HF_HANDLED
            | {"resample"},
            inert=_VIDEO_INERT,
            required=_VIDEO_REQUIRED,
            resample=3,
        )
    except mm.SpecError as e:
        raise mm.SpecError(f"{where}: {e}") from None
    shared = _hf_params({k: v for k, v in vp.items() if k in _VIDEO_SHARED})
    for key, value in shared.items():
        if image.get(key, value) != value:
            raise mm.SpecError(
                f"{where} {key}={value!r} differs from the image processor's "
                f"{image[key]!r}: one value serves both here"
            )
    for key, param in _VIDEO_READ.items():
        if vp.get(key) is not None:
            out[param] = vp[key]
    ident = files.added_tokens().get(VIDEO_PLACEHOLDER)
    if ident is not None:
        out["video_token_id"] = ident
    if files.root is not None and mm.TOKENIZER_FILE in files:
        out["tokenizer"] = str((files.root / mm.TOKENIZER_FILE).resolve())
    return out


def _image_token_id(files: mm.ModelDir, token_id: int | None) -> int:
    if token_id is not None:
        return int(token_id)
    cfg = files.config
    value = cfg.get("media_placeholder_token_id", MEDIA_PAD_TOKEN_ID)
    value = _int(value, "config.json media_placeholder_token_id")
    ident = files.added_tokens().get(MEDIA_PAD)
    if ident is not None and ident != value:
        raise mm.SpecError(
            f"config.json media_placeholder_token_id {value} disagrees with the tokenizer's "
            f"{MEDIA_PAD} = {ident}"
        )
    return value


def _k3_tokenizer(files: mm.ModelDir, tokenizer: str | Path | None) -> str:
    """Kimi K3's image text is tokenized by the model's tokenizer: ``tokenizer`` or the
    directory's ``tokenizer.json``."""
    if tokenizer is not None:
        return str(mm.tokenizer_file(tokenizer))
    if files.root is not None and mm.TOKENIZER_FILE in files:
        return str((files.root / mm.TOKENIZER_FILE).resolve())
    raise mm.SpecError(
        "Kimi K3 writes each image's 'image WxH' text with the model's tokenizer: the "
        "directory has no tokenizer.json (Kimi ships a tiktoken model: AutoTokenizer's "
        "save_pretrained writes one), pass tokenizer=PATH"
    )


def spec_from_hf(
    model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
    *,
    resample: str | None = None,
    image_token_id: int | None = None,
    tokenizer: str | Path | None = None,
) -> dict[str, Any]:
    """A ``kimi`` spec for a Kimi K2.5 or Kimi K3 model directory. ``resample`` picks the
    reference: ``"pil"`` (the checkpoint's processor) or ``"aten_u8"`` (transformers', Kimi
    K2.5 only); by default the one the directory's ``preprocessor_config.json`` belongs to.
    ``image_token_id`` overrides ``config.json``'s ``media_placeholder_token_id``. Videos
    (Kimi K2.5 in transformers' layout only, under ``"aten_u8"``) take the video processor's
    sampling and patch budget, the tokenizer's ``<|kimi_k25_video_placeholder|>`` id and the
    directory's ``tokenizer.json``. Kimi K3 takes the tokenizer from ``tokenizer`` or the
    directory's ``tokenizer.json``."""
    files = mm.ModelDir.of(model)
    cfg = files.config
    kind = cfg.get("model_type")
    if kind not in MODEL_TYPES:
        raise mm.SpecError(
            f"config.json model_type {kind!r} is not Kimi K2.5's or K3's ({sorted(MODEL_TYPES)})"
        )
    k3 = kind == "kimi_k3"
    _, pre = files.processor_settings("image")
    section = pre.get("media_proc_cfg")
    if section is not None:
        if not isinstance(section, Mapping):
            raise mm.SpecError("preprocessor_config.json media_proc_cfg must be a JSON object")
        mm.check_hf_settings(pre, handled={"media_proc_cfg"})
        params = _checkpoint_params(section, k3=k3)
        if k3:
            params["tokenizer"] = _k3_tokenizer(files, tokenizer)
        default = "pil"
    elif k3:
        raise mm.SpecError(
            "a Kimi K3 preprocessor_config.json holds the checkpoint's media_proc_cfg; this "
            "one has none (transformers has no Kimi K3 processor)"
        )
    else:
        ptype = pre.get("image_processor_type")
        if ptype not in PROCESSORS:
            raise mm.SpecError(
                f"image_processor_type {ptype!r} is not Kimi K2.5's ({sorted(PROCESSORS)}), "
                "and the file has no media_proc_cfg"
            )
        params = _hf_params(pre)
        params |= _video_params(files, params)
        default = "aten_u8"
    _vision_agrees(cfg, params)
    chosen = default if resample is None else resample
    params["resample"] = chosen
    params["image_token_id"] = _image_token_id(files, image_token_id)
    try:
        validated = KimiParams.model_validate(params)
    except (TypeError, ValueError) as e:  # pydantic's ValidationError is a ValueError
        raise mm.SpecError(f"the configs give invalid Kimi params: {e}") from e
    spec: dict[str, Any] = {"family": "kimi", "params": validated.model_dump(mode="json")}
    if chosen == "aten_u8":
        # transformers' loaders: EXIF orientation applied, alpha composited onto white.
        spec["decode"] = {"alpha": "white", "exif_orientation": True}
    return spec


__all__ = ["MODEL_TYPES", "PROCESSORS", "check_settings", "spec_from_hf"]
