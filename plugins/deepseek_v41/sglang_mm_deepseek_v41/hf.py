"""``spec_from_hf`` for DeepSeek-V4.1: a model directory's ``config.json`` to a spec. There is
no ``preprocessor_config.json`` to read (transformers has no image processor for the model):
the geometry lives in the model config, either flat as SGLang's runtime config holds it
(``vision_patch_size``, ...) or in an HF ``vision_config`` (``patch_size``, ...), read the way
SGLang's ``normalize_deepseek_v41_config`` reads them: a ``text_config`` under the top level,
a flat field before its ``vision_config`` counterpart."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sglang_mm_core import plugin as mm

from .params import DeepseekV41Params

#: Our param, its flat (SGLang) name and its ``vision_config`` name.
FIELDS = (
    ("patch_size", "vision_patch_size", "patch_size"),
    ("downsample_ratio", "vision_downsample_ratio", "downsample_ratio"),
    ("max_image_tokens", "vision_max_n_token", "max_image_tokens"),
    ("min_pixels", "vision_min_pixels", "min_pixels"),
    ("max_wh_ratio", "vision_max_wh_ratio", "max_wh_ratio"),
)
MODEL_TYPES = ("deepseek_v41", "deepseek_v41_text", "deepseek_v4")


def _section(cfg: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = cfg.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise mm.SpecError(f"config.json {key} must be an object, got {type(value).__name__}")
    return value


def spec_from_hf(
    model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
    *,
    pil_pass_order: str = "pillow13",
    image_token_id: int | None = None,
) -> dict[str, Any]:
    """A ``deepseek_v41`` spec for a DeepSeek-V4.1 model directory. ``image_token_id``
    overrides the config's; ``pil_pass_order`` picks the Pillow the output matches (13 and
    later, or ``"pillow12"``). A field the config sets to ``null`` takes SGLang's default,
    except ``max_wh_ratio``, whose ``null`` is its default."""
    files = mm.ModelDir.of(model)
    cfg = files.config
    kind = cfg.get("model_type")
    if kind is not None and kind not in MODEL_TYPES:
        raise mm.SpecError(f"config.json model_type {kind!r} is not DeepSeek-V4.1's {MODEL_TYPES}")
    flat = {**_section(cfg, "text_config"), **cfg}
    vision = _section(cfg, "vision_config")
    params: dict[str, Any] = {"pil_pass_order": pil_pass_order}
    for ours, flat_key, vision_key in FIELDS:
        value = flat.get(flat_key, vision.get(vision_key))
        if value is not None:
            params[ours] = value
    token = image_token_id if image_token_id is not None else flat.get("image_token_id")
    if token is not None:
        params["image_token_id"] = token
    try:
        checked = DeepseekV41Params(**params)
    except ValidationError as e:
        raise mm.SpecError(f"the config gives invalid DeepSeek-V4.1 params: {e}") from e
    return {"family": "deepseek_v41", "params": checked.model_dump(exclude_defaults=False)}
