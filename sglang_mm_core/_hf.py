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


__all__ = [
    "MODEL_CONFIG",
    "PREPROCESSOR_CONFIG",
    "hf_configs",
    "load_model_dir",
    "read_json_object",
]
