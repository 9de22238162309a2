"""Spec documents from an Inkling checkpoint's ``preprocessor_config.json`` and
``config.json``. There is no public Inkling config format, so the accepted keys are a closed
list (docs/families/inkling.md): a key we do not know might change the pixels, so it is refused
rather than ignored."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from sglang_mm_core.plugin import CLIP_MEAN, CLIP_STD, SpecError, deprecated_aliases, hf_configs

from .params import InklingParams

# preprocessor_config.json keys that map onto a spec parameter of the same name.
PARAM_KEYS = (
    "patch_size",
    "rescale_image_frac",
    "rescale_image_max_upscaled_long_edge",
    "temporal_patch_size",
)
# Keys that only describe the processor class.
METADATA_KEYS = ("image_processor_type", "processor_class", "auto_map")

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


# Keys whose value is fixed by the kernel: accepted only when they say what the kernel does.
FIXED_KEYS: Mapping[str, tuple[str, Callable[[Any], bool]]] = {
    # The kernel's float32 constants are the float32 roundings of these (docs/families/inkling.md).
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
    unknown = sorted(k for k in pre if k not in (*PARAM_KEYS, *METADATA_KEYS, *FIXED_KEYS))
    if unknown:
        raise SpecError(
            f"preprocessor_config.json has setting(s) the inkling family does not support: "
            f"{', '.join(unknown)} (they could change the pixels; accepted keys: "
            f"{', '.join((*PARAM_KEYS, *FIXED_KEYS, *METADATA_KEYS))})"
        )
    for key, (want, ok) in FIXED_KEYS.items():
        if key in pre and not ok(pre[key]):
            raise SpecError(
                f"preprocessor_config.json: {key}={pre[key]!r} is not supported "
                f"(the inkling kernel uses {want})"
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


def spec_from_hf(
    preprocessor_config: Mapping[str, Any] | str | Path,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``{"family": "inkling", "params": {...}}``, validated, for a model directory or its two
    parsed config files; settings left out of the preprocessor config take the spec defaults."""
    pp, cfg = hf_configs(preprocessor_config, config)
    params = _params_from_preprocessor(pp)
    params["image_token_id"] = _token_id(cfg)
    try:
        model = InklingParams.model_validate(params)
    except ValidationError as e:
        fields = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}"
            for err in e.errors()
        )
        raise SpecError(f"invalid inkling params from the HF configs: {fields}") from e
    return {"family": "inkling", "params": model.model_dump(mode="json")}


# `spec_from_hf_configs` was this function's name; `spec_from_hf` is the one name of the hook.
if not TYPE_CHECKING:  # runtime only: type checkers report the old names as missing
    __getattr__ = deprecated_aliases(
        __name__, {"spec_from_hf_configs": ("sglang_mm_inkling.spec_from_hf", spec_from_hf)}
    )

__all__ = ["FIXED_KEYS", "METADATA_KEYS", "PARAM_KEYS", "TOKEN_KEYS", "spec_from_hf"]
