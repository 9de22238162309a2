"""Spec documents from an Inkling checkpoint's directory: its ``preprocessor_config.json`` and
``config.json``. There is no public Inkling config format, so the accepted keys are a closed
list (docs/families/inkling.md): a key we do not know might change the pixels, so it is refused
rather than ignored."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from sglang_mm_core.plugin import CLIP_MEAN, CLIP_STD, ModelDir, SpecError, check_hf_settings

from .params import InklingParams

# preprocessor_config.json keys that map onto a spec parameter of the same name.
PARAM_KEYS = (
    "patch_size",
    "rescale_image_frac",
    "rescale_image_max_upscaled_long_edge",
    "temporal_patch_size",
)
_LANCZOS = 1  # PIL.Image.Resampling.LANCZOS


def _f32_equal(value: Any, want: tuple[float, ...]) -> bool:
    try:
        got = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return got.shape == (len(want),) and bool(
        np.array_equal(got.astype(np.float32), np.asarray(want, dtype=np.float32))
    )


def _is_true(v: Any) -> bool:
    return v is True


# Keys whose value is fixed by the family: accepted only when they say what it does.
FIXED_KEYS: Mapping[str, tuple[str, Callable[[Any], bool]]] = {
    # The table's float32 constants are the float32 roundings of these (docs/families/inkling.md).
    "image_mean": ("the CLIP mean", lambda v: _f32_equal(v, CLIP_MEAN)),
    "image_std": ("the CLIP std", lambda v: _f32_equal(v, CLIP_STD)),
    "rescale_factor": (
        "1/255",
        lambda v: (
            isinstance(v, int | float) and math.isfinite(v) and np.float32(v) == np.float32(1 / 255)
        ),
    ),
    "do_rescale": ("true", _is_true),
    "do_normalize": ("true", _is_true),
    "do_convert_rgb": ("true", _is_true),
    "resample": (
        "1 (LANCZOS)",
        lambda v: (
            (isinstance(v, int) and not isinstance(v, bool) and v == _LANCZOS)
            or (isinstance(v, str) and v.lower() == "lanczos")
        ),
    ),
}

TOKEN_KEYS = ("image_token_id", "image_token_index")


def _params_from_preprocessor(pre: Mapping[str, Any]) -> dict[str, Any]:
    # The fixed keys are judged here (as float32, LANCZOS by number or name); every other key
    # by the core's rule, which refuses any it does not know to be inert.
    check_hf_settings(
        {k: v for k, v in pre.items() if k not in FIXED_KEYS}, handled=frozenset(PARAM_KEYS)
    )
    for key, (want, ok) in FIXED_KEYS.items():
        if key in pre and not ok(pre[key]):
            raise SpecError(
                f"preprocessor_config.json: {key}={pre[key]!r} is not supported "
                f"(the inkling family uses {want})"
            )
    return {k: pre[k] for k in PARAM_KEYS if k in pre}


def _token_id(config: Mapping[str, Any]) -> int:
    found = {k: config[k] for k in TOKEN_KEYS if k in config and config[k] is not None}
    if not found:
        raise SpecError("config.json has no image_token_id (or image_token_index)")
    values = set(found.values())
    if len(values) != 1:
        raise SpecError(f"config.json: image_token_id and image_token_index disagree: {found}")
    (value,) = values
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpecError(f"config.json: image_token_id must be an integer, got {value!r}")
    return value


def spec_from_hf(model: ModelDir | str | Path | Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``{"family": "inkling", "params": {...}}``, validated, for a model directory (a
    `ModelDir`, its path, or its parsed files by name); settings left out of the preprocessor
    config take the spec defaults."""
    files = ModelDir.of(model)
    params = _params_from_preprocessor(files.preprocessor_config)
    params["image_token_id"] = _token_id(files.config)
    try:
        validated = InklingParams.model_validate(params)
    except ValidationError as e:
        fields = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}"
            for err in e.errors()
        )
        raise SpecError(f"invalid inkling params from the HF configs: {fields}") from e
    return {"family": "inkling", "params": validated.model_dump(mode="json")}


__all__ = ["FIXED_KEYS", "PARAM_KEYS", "TOKEN_KEYS", "spec_from_hf"]
