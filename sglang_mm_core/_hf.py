"""Reading a HuggingFace model directory for a family's ``spec_from_hf``: the two JSON files
every family maps (``preprocessor_config.json`` and ``config.json``), with a `SpecError` that
names the file for anything missing or malformed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import SpecError

PREPROCESSOR_CONFIG = "preprocessor_config.json"
MODEL_CONFIG = "config.json"


def read_json_object(path: str | Path) -> dict[str, Any]:
    """The JSON object in ``path``; a missing file, bad JSON or a non-object is a `SpecError`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise SpecError(f"{path.name} not found in {path.parent}") from e
    except (OSError, ValueError) as e:
        raise SpecError(f"cannot read {path}: {e}") from e
    if not isinstance(data, dict):
        raise SpecError(f"{path} must hold a JSON object")
    return data


def load_model_dir(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(preprocessor_config, config)`` of a model directory."""
    root = Path(path)
    if not root.is_dir():
        raise SpecError(f"{root} is not a model directory")
    return read_json_object(root / PREPROCESSOR_CONFIG), read_json_object(root / MODEL_CONFIG)


def hf_configs(
    preprocessor_config: Mapping[str, Any] | str | Path,
    config: Mapping[str, Any] | None = None,
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The two configs a ``spec_from_hf`` maps, given either a model directory (and no
    ``config``) or both parsed files; a mix, or a lone preprocessor config, is a `SpecError`."""
    if isinstance(preprocessor_config, (str, Path)):
        if config is not None:
            raise SpecError("pass a model directory, or both config dicts, not a mix")
        return load_model_dir(preprocessor_config)
    if config is None:
        raise SpecError("spec_from_hf needs config.json's content as well")
    return preprocessor_config, config


#: PIL's resample codes as HF's configs store them.
PIL_RESAMPLE_NAMES = {
    0: "nearest",
    1: "lanczos",
    2: "bilinear",
    3: "bicubic",
    4: "box",
    5: "hamming",
}


#: Preprocessor keys that name or route the processor, or choose the returned container or
#: device, in every HuggingFace image processor: they never change a pixel, so
#: `check_hf_settings` accepts them for every family.
HF_INERT_KEYS: frozenset[str] = frozenset(
    {
        "processor_class",
        "_processor_class",
        "image_processor_type",
        "auto_map",
        "return_tensors",
        "data_format",
        "input_data_format",
        "device",
        "disable_grouping",
    }
)


def check_hf_settings(
    preprocessor_config: Mapping[str, Any],
    *,
    handled: set[str] | frozenset[str],
    inert: set[str] | frozenset[str] = frozenset(),
    required: Mapping[str, Any] | None = None,
    must_be_off: set[str] | frozenset[str] | tuple[str, ...] = (),
    resample: int = 3,
    rescale_factor: float = 1 / 255,
) -> None:
    """Refuse, naming the key, every preprocessor setting a family cannot reproduce bit for
    bit: keys neither ``handled`` nor ``inert`` (nor one of `HF_INERT_KEYS`), ``required``
    keys set to another value, ``must_be_off`` keys switched on, and another ``resample`` or
    ``rescale_factor``. A key set to ``null`` means HF's default and passes. The one rule
    every ``spec_from_hf`` applies before it maps the values it handles."""
    pp = preprocessor_config
    for key in pp:
        if key not in handled and key not in inert and key not in HF_INERT_KEYS:
            raise SpecError(
                f"preprocessor setting {key!r} is not supported: "
                "its effect cannot be reproduced exactly"
            )
    for key, want in (required or {}).items():
        if pp.get(key) is not None and pp[key] != want:
            raise SpecError(
                f"preprocessor setting {key}={pp[key]!r} is not supported (only {want!r})"
            )
    for key in must_be_off:
        if pp.get(key):
            raise SpecError(f"preprocessor setting {key}={pp[key]!r} is not supported")
    got = pp.get("resample", resample)
    if got is not None and got != resample:
        name = PIL_RESAMPLE_NAMES.get(got, "unknown") if isinstance(got, int) else "?"
        want_name = PIL_RESAMPLE_NAMES.get(resample, "?")
        raise SpecError(
            f"preprocessor setting resample={got!r} ({name}) is not supported "
            f"(only {resample}, {want_name})"
        )
    factor = pp.get("rescale_factor", rescale_factor)
    if factor is not None and factor != rescale_factor:
        want = "1/255" if rescale_factor == 1 / 255 else repr(rescale_factor)
        raise SpecError(
            f"preprocessor setting rescale_factor={factor!r} is not supported (only {want})"
        )


__all__ = [
    "HF_INERT_KEYS",
    "MODEL_CONFIG",
    "PIL_RESAMPLE_NAMES",
    "PREPROCESSOR_CONFIG",
    "check_hf_settings",
    "hf_configs",
    "load_model_dir",
    "read_json_object",
]
