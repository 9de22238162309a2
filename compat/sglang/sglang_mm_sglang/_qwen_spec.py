"""The extension's ``spec_json`` for ``qwen_vl`` (what SGLang's ``RustMmSpec.rust_json()``
writes) as a sglang-mm spec document. The JSON's types are checked here, its values by the
family's params when the pipeline is built, so both fail as one `SpecError` naming the field."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, ValidationError

from sglang_mm_core.errors import SpecError

Channels = tuple[StrictFloat | StrictInt, StrictFloat | StrictInt, StrictFloat | StrictInt]


class SglangQwenSpec(BaseModel):
    """The fields the extension reads. Unknown fields are refused (the extension ignores
    them): one that changed the pixels must not be silently dropped."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: Literal["qwen_vl"] = "qwen_vl"
    image_token_id: StrictInt
    patch_size: StrictInt
    merge_size: StrictInt
    temporal_patch_size: StrictInt
    min_pixels: StrictInt
    max_pixels: StrictInt
    image_mean: Channels
    image_std: Channels
    resample: Literal["pil", "aten_u8"] = "aten_u8"
    #: SGLang's choice of transport for the features (shared memory or inline): no effect here.
    feature_shm: StrictBool | None = None


def _marker_ids(image_token_id: int) -> tuple[int, int]:
    """Vision start and end ids for the params, which must differ from the image id: the
    family's own defaults (Qwen2-VL's, else Qwen3.5's). They are never looked at (the
    extension does not check markers: ``strict_layout`` is off)."""
    from sglang_mm_qwen_vl import QWEN3_5, QwenVLParams

    defaults = QwenVLParams()
    candidates = (
        defaults.vision_start_token_id,
        defaults.vision_end_token_id,
        QWEN3_5["vision_start_token_id"],
        QWEN3_5["vision_end_token_id"],
    )
    free = [t for t in candidates if t != image_token_id]
    return free[0], free[1]


def _problems(err: ValidationError) -> str:
    """One ``field: message`` per invalid field."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(document)'}: {e['msg']}"
        for e in err.errors(include_url=False)
    )


def spec_document(spec_json: str | bytes, threads: int) -> dict[str, Any]:
    """The sglang-mm spec that reproduces the extension's ``qwen_vl`` pipeline: SGLang's
    ``smart_resize`` rule, no marker check, the extension's decode (alpha dropped, no EXIF
    transpose), and Pillow 13's resize pass order (the extension keeps Pillow 12's:
    docs/compat-sglang.md)."""
    try:
        s = SglangQwenSpec.model_validate_json(spec_json)
    except ValidationError as e:
        raise SpecError("qwen_vl spec: " + _problems(e)) from None
    start, end = _marker_ids(s.image_token_id)
    params = {
        "patch_size": s.patch_size,
        "merge_size": s.merge_size,
        "temporal_patch_size": s.temporal_patch_size,
        "min_pixels": s.min_pixels,
        "max_pixels": s.max_pixels,
        "image_mean": list(s.image_mean),
        "image_std": list(s.image_std),
        "image_token_id": s.image_token_id,
        "vision_start_token_id": start,
        "vision_end_token_id": end,
        "resample": s.resample,
        "smart_resize": "sglang",
        "pil_pass_order": "pillow13",
        "strict_layout": False,
    }
    return {
        "family": "qwen_vl",
        "params": params,
        "decode": {"alpha": "drop", "exif_orientation": False},
        "threads": threads,
    }
