"""``spec_from_hf`` for Gemma 4: a model directory's image and video processor settings (found
where transformers finds them, `ModelDir.processor_settings`) and ``config.json``'s token ids to
a spec. The tokenizer files, when present, cross-check those ids (``Gemma4Processor`` expands
the prompt with the tokenizer's ids, the model looks for ``config.json``'s), and the directory's
``tokenizer.json`` becomes the ``tokenizer`` param, which the videos' timestamps need. What
cannot be matched bit for bit is refused with the reason."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sglang_mm_core import plugin as mm

from .params import BOI_TOKEN_ID, EOI_TOKEN_ID, IMAGE_TOKEN_ID, VIDEO_TOKEN_ID, Gemma4Params

PROCESSORS = {"Gemma4ImageProcessor", "Gemma4ImageProcessorFast", "Gemma4ImageProcessorPil"}
VIDEO_PROCESSOR = "Gemma4VideoProcessor"
BICUBIC = 3
# Every key of Gemma 4's image processor settings this mapping reads; any other key that is not
# one of the core's HF_INERT_KEYS is refused (check_hf_settings), never silently dropped.
_HANDLED = {
    "do_resize",
    "do_rescale",
    "do_normalize",
    "do_convert_rgb",
    "resample",
    "rescale_factor",
    "image_mean",
    "image_std",
    "patch_size",
    "max_soft_tokens",
    "pooling_kernel_size",
}
# Read by nothing in HF's Gemma 4 classes (the resize is the patch budget's, not ``size``'s;
# ``image_seq_length`` is the processor's, never used to expand an image): accepted.
_INERT = {"image_seq_length", "size", "default_to_square", "crop_size", "pad_size"}
# Ignored by HF's Gemma 4 classes too, but a config that switches them on asks for a crop or a
# pad that Gemma 4 never makes: refused rather than silently dropped.
_MUST_BE_OFF = ("do_center_crop", "do_pad")
# The video processor's own keys (beside the image processor's): its sampling. ``fps`` can only
# be null: with num_frames (which always has a value) Gemma4VideoProcessor refuses it.
_VIDEO_HANDLED = _HANDLED | set(_MUST_BE_OFF) | {"num_frames", "do_sample_frames", "fps"}
_VIDEO_INERT = _INERT | {"video_processor_type", "return_metadata", "video_metadata"}
#: Gemma4VideoProcessor's class defaults, for the keys its settings leave out.
VIDEO_DEFAULTS: dict[str, Any] = {
    "max_soft_tokens": 70,
    "num_frames": 32,
    "do_sample_frames": True,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.0, 0.0, 0.0],
    "image_std": [1.0, 1.0, 1.0],
    "patch_size": 16,
    "pooling_kernel_size": 3,
}
VIDEO_TOKEN = "<|video|>"
# The patch geometry the image processor shares with the vision tower: {setting: (config.json
# vision_config key, default)}.
_GEOMETRY = {"patch_size": ("patch_size", 16), "pooling_kernel_size": ("pooling_kernel_size", 3)}
# (spec param, config.json key, tokenizer_config.json name of the token)
_TOKENS = (
    ("boi_token_id", "boi_token_id", "boi_token", BOI_TOKEN_ID),
    ("eoi_token_id", "eoi_token_id", "eoi_token", EOI_TOKEN_ID),
    ("image_token_id", "image_token_id", "image_token", IMAGE_TOKEN_ID),
)


def _get(cfg: Mapping[str, Any], key: str, default: Any) -> Any:
    value = cfg.get(key)
    return default if value is None else value


def check_settings(pre: Mapping[str, Any], *, video: bool = False) -> None:
    """Refuse, naming the key, the image (or ``video``) processor settings Gemma 4's kernels
    cannot reproduce: the rule of `spec_from_hf` and of the transformers drop-in's
    construction."""
    for key in ("do_resize", "do_convert_rgb"):
        if pre.get(key) is False:
            raise mm.SpecError(f"{key}: false is not supported (Gemma 4 checkpoints set it true)")
    if video and pre.get("fps") is not None:
        raise mm.SpecError(
            f"fps={pre['fps']!r} is not supported: Gemma4VideoProcessor samples num_frames "
            "frames, and with fps set too it refuses every video"
        )
    mm.check_hf_settings(
        pre,
        handled=_VIDEO_HANDLED if video else _HANDLED | set(_MUST_BE_OFF),
        inert=_VIDEO_INERT if video else _INERT,
        must_be_off=_MUST_BE_OFF,
        resample=BICUBIC,
        # any factor is honoured exactly (the table is built from it): not a refusal
        rescale_factor=_get(pre, "rescale_factor", 1 / 255),
    )


def video_settings(files: mm.ModelDir) -> tuple[str, dict[str, Any]]:
    """Where the video processor's settings are and what they say, as ``AutoVideoProcessor``
    finds them (a directory with only the image processor's ``preprocessor_config.json`` gives
    its settings to the video processor too); a directory with none at all gets
    Gemma4VideoProcessor's defaults."""
    nested = files.get("processor_config.json") or {}
    if "video_processor" in nested or {
        "video_preprocessor_config.json",
        "preprocessor_config.json",
    } & set(files.names):
        return files.processor_settings("video")
    return "Gemma4VideoProcessor's defaults", {"video_processor_type": VIDEO_PROCESSOR}


def _tokenizer_names(files: mm.ModelDir) -> dict[str, str]:
    """``{"boi_token": "<...>", ...}`` as the tokenizer config names them (top level, or in
    ``extra_special_tokens`` as a mapping); empty without one."""
    cfg = files.get("tokenizer_config.json") or {}
    extra = cfg.get("extra_special_tokens")
    sources = [cfg, extra if isinstance(extra, Mapping) else {}]
    out: dict[str, str] = {}
    for _, _, name, _ in _TOKENS:
        for src in sources:
            value = src.get(name)
            if isinstance(value, Mapping):  # an AddedToken saved as an object
                value = value.get("content")
            if isinstance(value, str):
                out[name] = value
                break
    return out


def _vocab_id(files: mm.ModelDir, token: str) -> int | None:
    """``token``'s id among the tokenizer's added tokens, else in ``tokenizer.json``'s vocab."""
    added = files.added_tokens()
    if token in added:
        return added[token]
    model = (files.get("tokenizer.json") or {}).get("model")
    vocab = model.get("vocab") if isinstance(model, Mapping) else None
    if isinstance(vocab, Mapping):
        ident = vocab.get(token)
        return ident if isinstance(ident, int) and not isinstance(ident, bool) else None
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...], the id is the index
        for i, entry in enumerate(vocab):
            if isinstance(entry, list) and entry and entry[0] == token:
                return i
    return None


def _token_ids(files: mm.ModelDir, token_ids: Mapping[str, Any]) -> dict[str, int]:
    """The image sequence's ids: ``token_ids`` first, then ``config.json``'s (Gemma4Config's
    defaults when it has none), each checked against the tokenizer's when it names the token."""
    unknown = set(token_ids) - {p for p, _, _, _ in _TOKENS}
    if unknown:
        raise mm.SpecError(
            f"token_ids: unknown keys {sorted(unknown)} "
            f"(only {[p for p, *_ in _TOKENS] + ['video_token_id']})"
        )
    cfg = files.config
    names = _tokenizer_names(files)
    out: dict[str, int] = {}
    for param, key, name, default in _TOKENS:
        if token_ids.get(param) is not None:
            out[param] = int(token_ids[param])
            continue
        value = _get(cfg, key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise mm.SpecError(f"config.json {key}={value!r} must be an integer token id")
        token = names.get(name)
        ident = None if token is None else _vocab_id(files, token)
        if ident is not None and ident != value:
            raise mm.SpecError(
                f"config.json {key} {value} disagrees with the tokenizer's {name} {token!r} = "
                f"{ident} (Gemma4Processor would expand the prompt with {ident})"
            )
        out[param] = value
    return out


def _video_params(files: mm.ModelDir, image: Mapping[str, Any]) -> dict[str, Any]:
    """The ``video_*`` params (and the video token id) from the video processor's settings,
    which must agree with the image processor's where the family shares one value."""
    where, vp = video_settings(files)
    kind = vp.get("video_processor_type") or vp.get("image_processor_type")
    if kind != VIDEO_PROCESSOR and kind not in PROCESSORS:
        raise mm.SpecError(f"{where}: processor type {kind!r} is not Gemma 4's")
    try:
        check_settings(vp, video=True)
    except mm.SpecError as e:
        raise mm.SpecError(f"{where}: {e}") from None

    def get(key: str) -> Any:
        return _get(vp, key, VIDEO_DEFAULTS[key])

    for key in ("patch_size", "pooling_kernel_size", "do_rescale", "rescale_factor"):
        if get(key) != image[key]:
            raise mm.SpecError(
                f"{where}: {key}={get(key)!r} differs from the image processor's "
                f"{image[key]!r} (the family shares one)"
            )
    return {
        "video_max_soft_tokens": get("max_soft_tokens"),
        "video_num_frames": get("num_frames"),
        "video_do_sample_frames": get("do_sample_frames"),
        "video_do_normalize": get("do_normalize"),
        "video_image_mean": list(mm.hf_channels(vp, "image_mean", (0.0, 0.0, 0.0))),
        "video_image_std": list(mm.hf_channels(vp, "image_std", (1.0, 1.0, 1.0))),
    }


def _video_token_id(files: mm.ModelDir, token_ids: Mapping[str, Any]) -> int:
    """``<|video|>``'s id: ``token_ids``' first, then ``config.json``'s (Gemma4Config's
    default), checked against the tokenizer's where it has the token."""
    if token_ids.get("video_token_id") is not None:
        return int(token_ids["video_token_id"])
    value = _get(files.config, "video_token_id", VIDEO_TOKEN_ID)
    if not isinstance(value, int) or isinstance(value, bool):
        raise mm.SpecError(f"config.json video_token_id={value!r} must be an integer token id")
    ident = _vocab_id(files, VIDEO_TOKEN)
    if ident is not None and ident != value:
        raise mm.SpecError(
            f"config.json video_token_id {value} disagrees with the tokenizer's {VIDEO_TOKEN!r} "
            f"= {ident} (Gemma4Processor would expand the prompt with {ident})"
        )
    return value


def spec_from_hf(
    model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
    *,
    resample: str = "pil",
    token_ids: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``gemma4`` spec for a Gemma 4 model directory. ``resample`` picks the HF backend to
    match: ``pil`` (``Gemma4ImageProcessorPil``, the default) or ``aten_u8`` (the torchvision
    ``Gemma4ImageProcessor``); ``token_ids`` (keys ``image_token_id``, ``boi_token_id``,
    ``eoi_token_id``, ``video_token_id``) overrides ``config.json``'s ids. The directory's
    ``tokenizer.json``, when it has one, is the ``tokenizer`` param (by its resolved path)."""
    files = mm.ModelDir.of(model)
    _, pre = files.processor_settings("image")
    cfg = files.config
    kind = pre.get("image_processor_type")
    if kind not in PROCESSORS:
        raise mm.SpecError(f"image_processor_type {kind!r} is not Gemma 4's ({sorted(PROCESSORS)})")
    check_settings(pre)
    ids = dict(token_ids or {})
    video_id = _video_token_id(files, ids)
    ids.pop("video_token_id", None)
    try:
        params: dict[str, Any] = {
            "resample": resample,
            **mm.vision_geometry(pre, cfg, _GEOMETRY),
            "max_soft_tokens": _get(pre, "max_soft_tokens", 280),
            "do_rescale": _get(pre, "do_rescale", True),
            "rescale_factor": _get(pre, "rescale_factor", 1 / 255),
            "do_normalize": _get(pre, "do_normalize", False),
            "image_mean": list(mm.hf_channels(pre, "image_mean", (0.0, 0.0, 0.0))),
            "image_std": list(mm.hf_channels(pre, "image_std", (1.0, 1.0, 1.0))),
            **_token_ids(files, ids),
            "video_token_id": video_id,
        }
        params.update(_video_params(files, params))
        if files.root is not None and mm.TOKENIZER_FILE in files:
            params["tokenizer"] = str(mm.tokenizer_file(files.root))
        validated = Gemma4Params.model_validate(params)
    except (TypeError, ValueError) as e:  # pydantic's ValidationError is a ValueError
        raise mm.SpecError(f"the configs give invalid Gemma 4 params: {e}") from e
    return {"family": "gemma4", "params": validated.model_dump(mode="json")}


__all__ = [
    "BICUBIC",
    "PROCESSORS",
    "VIDEO_DEFAULTS",
    "VIDEO_PROCESSOR",
    "check_settings",
    "spec_from_hf",
    "video_settings",
]
