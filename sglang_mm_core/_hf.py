"""A HuggingFace model directory as a family's ``spec_from_hf`` reads it: every JSON file it
holds (``preprocessor_config.json``, ``config.json``, ``processor_config.json``, the tokenizer
files, ...), each parsed on first use, with a `SpecError` naming the file for anything missing
or malformed; and the one rule that refuses preprocessor settings a family cannot honour."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from .errors import SpecError

PREPROCESSOR_CONFIG = "preprocessor_config.json"
MODEL_CONFIG = "config.json"
PROCESSOR_CONFIG = "processor_config.json"
VIDEO_PREPROCESSOR_CONFIG = "video_preprocessor_config.json"


def _read_json_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise SpecError(f"{path.name} not found in {path.parent}") from e
    except (OSError, ValueError) as e:
        raise SpecError(f"cannot read {path}: {e}") from e
    if not isinstance(data, dict):
        raise SpecError(f"{path} must hold a JSON object")
    return data


class ModelDir:
    """The JSON files of a model directory, by file name, parsed on first use and kept (a
    directory's ``tokenizer.json`` can be megabytes: nobody pays for it unless read). Built
    from a directory (`ModelDir.load`) or from parsed files (``ModelDir({"config.json":
    {...}})``, for tests and for callers that hold the configs already)."""

    def __init__(
        self, files: Mapping[str, Mapping[str, Any]] | None = None, *, root: Path | None = None
    ) -> None:
        self.root = root
        self._parsed: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (files or {}).items()}
        found = set(self._parsed)
        if root is not None:
            found |= {p.name for p in root.glob("*.json") if p.is_file()}
        self.names: tuple[str, ...] = tuple(sorted(found))

    @classmethod
    def load(cls, path: str | Path) -> ModelDir:
        """The model directory at ``path`` (a `SpecError` when it is not one)."""
        root = Path(path)
        if not root.is_dir():
            raise SpecError(f"{root} is not a model directory")
        return cls(root=root)

    @classmethod
    def of(cls, model: ModelDir | str | Path | Mapping[str, Mapping[str, Any]]) -> ModelDir:
        """``model`` as a `ModelDir`: itself, the directory at a path, or parsed files."""
        if isinstance(model, ModelDir):
            return model
        if isinstance(model, (str, Path)):
            return cls.load(model)
        if isinstance(model, Mapping):
            return cls(model)
        raise SpecError(
            f"spec_from_hf takes a model directory or its parsed files, not {type(model).__name__}"
        )

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def get(self, name: str) -> dict[str, Any] | None:
        """The parsed file ``name``, or None when the directory has none."""
        if name in self._parsed:
            return self._parsed[name]
        if self.root is None or name not in self.names:
            return None
        data = _read_json_object(self.root / name)
        self._parsed[name] = data
        return data

    def require(self, name: str) -> dict[str, Any]:
        """The parsed file ``name``; a `SpecError` naming it when missing."""
        data = self.get(name)
        if data is None:
            where = f" in {self.root}" if self.root is not None else ""
            raise SpecError(f"{name} not found{where}")
        return data

    @property
    def preprocessor_config(self) -> dict[str, Any]:
        return self.require(PREPROCESSOR_CONFIG)

    @property
    def config(self) -> dict[str, Any]:
        return self.require(MODEL_CONFIG)

    def processor_settings(self, kind: Literal["image", "video"]) -> tuple[str, dict[str, Any]]:
        """``(where, settings)``: the image or video processor settings transformers'
        ``AutoImageProcessor`` / ``AutoVideoProcessor`` read for this directory, and where they
        came from. Images: ``processor_config.json``'s ``image_processor`` section, else
        ``preprocessor_config.json``. Videos: ``processor_config.json``'s ``video_processor``
        section, else ``video_preprocessor_config.json``, else ``preprocessor_config.json``
        (older checkpoints share the image processor's file with their videos). A `SpecError`
        when none is there, or when the section is not a JSON object."""
        section = f"{kind}_processor"
        nested = self.get(PROCESSOR_CONFIG)
        if nested is not None and section in nested:
            found = nested[section]
            if not isinstance(found, dict):
                raise SpecError(f"{PROCESSOR_CONFIG}: {section} must be a JSON object")
            return f"{PROCESSOR_CONFIG} {section}", found
        if kind == "video":
            alone = self.get(VIDEO_PREPROCESSOR_CONFIG)
            if alone is not None:
                return VIDEO_PREPROCESSOR_CONFIG, alone
        return PREPROCESSOR_CONFIG, self.preprocessor_config

    def added_tokens(self) -> dict[str, int]:
        """``{content: id}`` of the tokenizer's added (special) tokens: ``tokenizer.json``'s
        ``added_tokens``, then ``tokenizer_config.json``'s ``added_tokens_decoder`` (empty
        when the directory has neither)."""
        out: dict[str, int] = {}
        tok = self.get("tokenizer.json")
        for entry in (tok or {}).get("added_tokens") or []:
            if isinstance(entry, dict) and isinstance(entry.get("content"), str):
                ident = entry.get("id")
                if isinstance(ident, int) and not isinstance(ident, bool):
                    out.setdefault(entry["content"], ident)
        cfg = self.get("tokenizer_config.json")
        decoder = (cfg or {}).get("added_tokens_decoder") or {}
        if isinstance(decoder, dict):
            for key, entry in decoder.items():
                content = entry.get("content") if isinstance(entry, dict) else None
                if isinstance(content, str) and str(key).isdigit():
                    out.setdefault(content, int(key))
        return out

    def __repr__(self) -> str:
        where = "" if self.root is None else f"{str(self.root)!r}, "
        return f"ModelDir({where}files={list(self.names)})"


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


def hf_channels(
    settings: Mapping[str, Any], key: str, default: tuple[float, float, float]
) -> tuple[float, float, float]:
    """A per-channel preprocessor setting (``image_mean``, ``image_std``) as three floats: HF
    also takes one number for all three; ``default`` where the key is absent or null; a
    `SpecError` naming the key for anything else."""
    value = settings.get(key)
    if value is None:
        return (float(default[0]), float(default[1]), float(default[2]))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (float(value),) * 3
    if isinstance(value, list) and len(value) == 3:
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return (float(value[0]), float(value[1]), float(value[2]))
    raise SpecError(f"preprocessor setting {key}={value!r} must be 3 numbers")


def vision_geometry(
    settings: Mapping[str, Any],
    config: Mapping[str, Any],
    keys: Mapping[str, tuple[str, int]],
) -> dict[str, int]:
    """The processor's patch geometry, ``{setting: value}`` for each ``setting: (vision_config
    key, default)`` of ``keys``, each refused with a `SpecError` when ``config.json``'s
    ``vision_config`` (what the vision tower was built with) says otherwise: the processor's
    value is what HF's processor uses, so a mismatched pair is refused rather than chosen."""
    vision = config.get("vision_config")
    tower_config = vision if isinstance(vision, Mapping) else {}
    out: dict[str, int] = {}
    for key, (vkey, default) in keys.items():
        value = settings.get(key)
        value = default if value is None else value
        if not isinstance(value, int) or isinstance(value, bool):
            raise SpecError(f"preprocessor setting {key}={value!r} must be an integer")
        tower = tower_config.get(vkey)
        if tower is not None and tower != value:
            raise SpecError(
                f"preprocessor {key}={value!r} disagrees with config.json vision_config "
                f"{vkey}={tower!r}"
            )
        out[key] = value
    return out


__all__ = [
    "HF_INERT_KEYS",
    "MODEL_CONFIG",
    "PIL_RESAMPLE_NAMES",
    "PREPROCESSOR_CONFIG",
    "PROCESSOR_CONFIG",
    "VIDEO_PREPROCESSOR_CONFIG",
    "ModelDir",
    "check_hf_settings",
    "hf_channels",
    "vision_geometry",
]
