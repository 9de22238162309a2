"""``spec_from_hf`` for Gemma 3: a model directory's ``preprocessor_config.json`` and
``config.json`` (plus, when it has one, ``tokenizer.json`` for the ids of ``"\\n\\n"`` and of the
pan-and-scan phrases) to a spec; what cannot be matched bit for bit is refused with the reason."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sglang_mm_core import plugin as mm

from .params import DOUBLE_NEWLINE_TOKEN_ID, Gemma3Params

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PROCESSORS = {"Gemma3ImageProcessor", "Gemma3ImageProcessorFast", "Gemma3ImageProcessorPil"}
PAS_PHRASES = {
    "pan_and_scan_prefix_ids": "Here is the original image ",
    "pan_and_scan_infix_ids": " and here are some crops to help you see better ",
    "pan_and_scan_separator_ids": " ",
}
BILINEAR = 2
# Every key of Gemma 3's preprocessor config this mapping reads; any other key that is not
# one of the core's HF_INERT_KEYS is refused (check_hf_settings), never silently dropped.
_HANDLED = {
    "do_resize",
    "do_rescale",
    "do_normalize",
    "do_convert_rgb",
    "resample",
    "size",
    "rescale_factor",
    "image_mean",
    "image_std",
    "image_seq_length",
    "do_pan_and_scan",
    "pan_and_scan_min_crop_size",
    "pan_and_scan_max_num_crops",
    "pan_and_scan_min_ratio_to_activate",
}
TOKENIZER = "tokenizer.json"


def _tokenizer(files: mm.ModelDir) -> Tokenizer | None:
    """The directory's ``tokenizer.json`` as a `tokenizers.Tokenizer` (None without one): from
    the file itself when it is on disk, else from its parsed form."""
    if TOKENIZER not in files:
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        raise mm.SpecError(
            "reading tokenizer.json needs the `tokenizers` package (pip install tokenizers), "
            "or pass double_newline_token_id and the pan-and-scan ids in the spec"
        ) from e
    try:
        if files.root is not None and (files.root / TOKENIZER).is_file():
            return Tokenizer.from_file(str(files.root / TOKENIZER))
        return Tokenizer.from_str(json.dumps(files.require(TOKENIZER)))
    except Exception as e:  # tokenizers raises a bare Exception on a malformed file
        raise mm.SpecError(f"cannot load {TOKENIZER}: {e}") from e


def _tokenizer_ids(files: mm.ModelDir) -> dict[str, Any]:
    """The "\\n\\n" id and the phrases' ids from the directory's ``tokenizer.json``."""
    tok = _tokenizer(files)
    if tok is None:
        return {}
    nl2 = tok.encode("\n\n", add_special_tokens=False).ids
    if len(nl2) != 1:
        raise mm.SpecError(f'tokenizer.json encodes "\\n\\n" as {nl2}, not one token')
    out: dict[str, Any] = {"double_newline_token_id": nl2[0]}
    for key, text in PAS_PHRASES.items():
        out[key] = tok.encode(text, add_special_tokens=False).ids
    return out


def _get(cfg: Mapping[str, Any], key: str, default: Any) -> Any:
    value = cfg.get(key)
    return default if value is None else value


def _check_settings(pre: Mapping[str, Any]) -> None:
    """Refuse, naming the key, the preprocessor settings Gemma 3's kernel cannot reproduce:
    the rule of `spec_from_hf` and of the transformers drop-in's construction."""
    for key in ("do_resize", "do_rescale", "do_normalize", "do_convert_rgb"):
        if pre.get(key) is False:
            raise mm.SpecError(f"{key}: false is not supported (Gemma 3 checkpoints set it true)")
    mm.check_hf_settings(
        pre,
        handled=_HANDLED,
        resample=BILINEAR,
        # any factor is honoured exactly (the table is built from it): not a refusal
        rescale_factor=_get(pre, "rescale_factor", 1 / 255),
    )


def spec_from_hf(
    model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
    *,
    resample: str = "aten_u8",
    do_pan_and_scan: bool | None = None,
    token_ids: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``gemma3`` spec for a Gemma 3 model directory. The ids of ``"\\n\\n"`` and of the
    pan-and-scan phrases come from its ``tokenizer.json`` when it has one; ``token_ids`` (keys
    ``double_newline_token_id`` and the ``pan_and_scan_*_ids``) overrides them. ``resample``
    picks the HF backend to match: ``aten_u8`` (the default torchvision class) or ``pil``;
    ``do_pan_and_scan`` overrides the preprocessor's setting."""
    files = mm.ModelDir.of(model)
    pre, cfg = files.preprocessor_config, files.config
    ids = _tokenizer_ids(files)
    ids.update(token_ids or {})
    kind = pre.get("image_processor_type")
    if kind not in PROCESSORS:
        raise mm.SpecError(f"image_processor_type {kind!r} is not Gemma 3's ({sorted(PROCESSORS)})")
    _check_settings(pre)
    tokens = int(_get(cfg, "mm_tokens_per_image", 256))
    if _get(pre, "image_seq_length", tokens) != tokens:
        raise mm.SpecError(
            f"preprocessor image_seq_length {pre['image_seq_length']} disagrees with config.json "
            f"mm_tokens_per_image {tokens}"
        )
    size = _get(pre, "size", {"height": 896, "width": 896})
    if not isinstance(size, Mapping) or size.get("height") != size.get("width"):
        raise mm.SpecError(f"size {size!r} is not a square {{height, width}}")

    def triple(key: str) -> Sequence[float]:
        v = _get(pre, key, [0.5, 0.5, 0.5])
        return [float(v)] * 3 if isinstance(v, (int, float)) else list(v)

    pas = do_pan_and_scan if do_pan_and_scan is not None else bool(pre.get("do_pan_and_scan"))
    params: dict[str, Any] = {
        "resample": resample,
        "size": int(size["height"]),
        "rescale_factor": float(_get(pre, "rescale_factor", 1 / 255)),
        "image_mean": triple("image_mean"),
        "image_std": triple("image_std"),
        "image_token_id": int(_get(cfg, "boi_token_index", 255999)),
        "eoi_token_id": int(_get(cfg, "eoi_token_index", 256000)),
        "image_soft_token_id": int(_get(cfg, "image_token_index", 262144)),
        "double_newline_token_id": int(ids.get("double_newline_token_id", DOUBLE_NEWLINE_TOKEN_ID)),
        "mm_tokens_per_image": tokens,
        "do_pan_and_scan": pas,
        "pan_and_scan_min_crop_size": int(_get(pre, "pan_and_scan_min_crop_size", 256)),
        "pan_and_scan_max_num_crops": int(_get(pre, "pan_and_scan_max_num_crops", 4)),
        "pan_and_scan_min_ratio_to_activate": float(
            _get(pre, "pan_and_scan_min_ratio_to_activate", 1.2)
        ),
    }
    for key in PAS_PHRASES:
        if key in ids:
            params[key] = [int(i) for i in ids[key]]
    try:
        Gemma3Params(**params)
    except ValueError as e:
        raise mm.SpecError(f"the configs give invalid Gemma 3 params: {e}") from e
    return {"family": "gemma3", "params": params}
