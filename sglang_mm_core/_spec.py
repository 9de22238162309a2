"""The spec document (see README.md): pydantic models, validated as a whole before any
request is served. The family's own ``params`` are validated by its ``Params`` model, so a bad
spec fails at load time with every invalid field named, never at request time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from . import _native
from ._family import DecodeDefaults, Family, FamilyParams
from ._source_mode import canonical_source_modes
from .errors import PluginError, SpecError

if TYPE_CHECKING:
    from ._registry import Registry


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Limits(_Strict):
    """Per-request budgets; over any of them the request fails with a `LimitError`."""

    max_items: int = Field(64, ge=0, description="Most media sources in one request.")
    max_total_bytes: int = Field(
        1_342_177_280, gt=0, description="Most encoded bytes over all sources of one request."
    )
    max_stream_bytes: int = Field(
        67_108_864, gt=0, description="Most bytes of one file or HTTP stream."
    )
    max_image_pixels: int = Field(
        _native.DEFAULT_MAX_PIXELS,
        gt=0,
        description="Most pixels of one decoded image (Pillow's bomb limit).",
    )
    max_image_side: int = Field(
        _native.DEFAULT_MAX_SIDE, gt=0, description="Longest side of one decoded image."
    )
    max_body_bytes: int = Field(
        67_108_864, gt=0, description="Most bytes of one HTTP request body (the server's cap)."
    )
    max_video_frames: int = Field(
        100_000, gt=0, description="Most frames one video's stream may hold (stated or read)."
    )
    max_video_duration_s: float = Field(
        3 * 3600.0, gt=0, allow_inf_nan=False, description="Longest duration of one video."
    )
    max_video_decoded_bytes: int = Field(
        8 * 2**30, gt=0, description="Most RGB bytes the frames sampled from one video decode to."
    )
    max_video_feature_bytes: int = Field(
        4 * 2**30,
        gt=0,
        description="Most bytes one video's feature may take in its full form (what the "
        "answer holds), checked from its plan before a frame is decoded.",
    )


class DecodeOptions(_Strict):
    """Colour and orientation handling; a field left out takes the family's default."""

    alpha: Literal["white", "drop"] | None = Field(
        None, description="Alpha handling; null = the family's reference behaviour."
    )
    exif_orientation: bool | None = Field(
        None, description="Apply the EXIF orientation tag; null = the family's default."
    )
    source_modes: tuple[str, ...] | None = Field(
        None,
        description="The source modes accepted (Pillow's mode an image opens in, with "
        "'+transparency' where Pillow reads a transparency entry: 'RGB', 'L', "
        "'P+transparency', ...); any other image is refused before it is decoded. "
        "null = the family's default (most families accept every image).",
    )

    @field_validator("source_modes")
    @classmethod
    def _known_modes(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else canonical_source_modes(value)


class FetchPolicy(_Strict):
    """Which sources may be fetched, and how long a download may take."""

    timeout_s: float | None = Field(
        None, gt=0, description="Whole-download timeout; else $REQUEST_TIMEOUT, else 3 s."
    )
    allow_file: bool = True
    file_root: str | None = None
    allowed_domains: list[str] | None = None
    allow_private_networks: bool = True


class CacheOptions(_Strict):
    """The feature cache (off unless given): processed items keyed by the spec fingerprint
    and the encoded bytes' BLAKE3 digest, compact where the family offers it."""

    max_bytes: int = Field(gt=0, description="Most bytes of features kept (LRU beyond).")


class Spec(_Strict):
    """The whole spec document. ``params`` stays a plain mapping here because its model depends
    on ``family``; `load_spec` validates it against the family's ``Params``."""

    family: str = Field(min_length=1, description="Name of an installed family.")
    params: dict[str, Any] = Field(default_factory=dict, description="The family's Params.")
    limits: Limits = Field(default_factory=Limits)
    decode: DecodeOptions = Field(default_factory=DecodeOptions)
    fetch: FetchPolicy = Field(default_factory=FetchPolicy)
    threads: int | None = Field(
        None,
        ge=0,
        description="Worker threads; null = $SGLANG_MM_THREADS, else min(8, cores); 0 = inline.",
    )
    cache: CacheOptions | None = Field(None, description="The feature cache; null = none.")


def _canonical(doc: Any) -> str:
    return json.dumps(
        doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


@dataclass(frozen=True)
class ResolvedSpec:
    """A validated spec bound to its family: params parsed, decode defaults filled in.

    ``canonical_json`` is the whole resolved document (every default written out, keys sorted,
    no whitespace), so two spellings of one spec give one text. The fingerprint covers only the
    parts that decide the output (``family``, ``params``, ``decode``): limits, fetch policy,
    threads and the cache change whether or how fast a request is served, never its features,
    so a cache keyed on ``(spec_fingerprint, content hash)`` is shared across them."""

    spec: Spec
    family: type[Family[Any]]
    params: FamilyParams
    #: Why the family refuses the source modes it leaves out (its `DecodeDefaults`), when
    #: the spec's ``decode.source_modes`` is the family's own; None otherwise.
    source_modes_reason: str | None = None

    @property
    def canonical_json(self) -> str:
        return _canonical(self.spec.model_dump(mode="json"))

    @property
    def fingerprint_json(self) -> str:
        return _canonical(self.spec.model_dump(mode="json", include={"family", "params", "decode"}))

    @property
    def fingerprint(self) -> str:
        return _native.blake3_hex(self.fingerprint_json.encode())


def spec_fingerprint(spec: ResolvedSpec) -> str:
    """BLAKE3 hex of the canonical JSON of the spec's output-defining part."""
    return spec.fingerprint


def format_validation_error(err: ValidationError, prefix: str = "") -> list[str]:
    """One ``field.path: message`` line per invalid field."""
    lines = []
    for e in err.errors(include_url=False):
        loc = ".".join(str(p) for p in (prefix, *e["loc"]) if p != "")
        lines.append(f"{loc or '(document)'}: {e['msg']}")
    return lines


def _is_path(spec: object) -> bool:
    return isinstance(spec, Path) or (
        isinstance(spec, str) and not spec.lstrip().startswith(("{", "["))
    )


def read_spec_document(spec: str | bytes | Mapping[str, Any] | Path) -> dict[str, Any]:
    """The raw document: a mapping as is; bytes, or a string starting with ``{`` or ``[``, as
    JSON text; any other string, or a `Path`, as the path of a JSON file."""
    if isinstance(spec, Mapping):
        return dict(spec)
    origin = "spec"
    if isinstance(spec, Path) or (isinstance(spec, str) and _is_path(spec)):
        path = Path(spec)
        try:
            text: str | bytes = path.read_bytes()
        except OSError as e:
            raise SpecError(f"cannot read spec file {str(path)!r}: {e.strerror or e}") from None
        origin = f"spec file {str(path)!r}"
    else:
        text = spec
    try:
        doc = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SpecError(f"{origin} is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise SpecError(f"{origin} must be a JSON object, got {type(doc).__name__}")
    return doc


def load_spec(
    spec: str | bytes | Mapping[str, Any] | Path | Spec,
    *,
    registry: Registry | None = None,
    spec_dir: Path | None = None,
) -> ResolvedSpec:
    """Validate a whole spec document against the installed families (or ``registry``). A
    spec file's folder (or ``spec_dir``, for a document read from one) is what its params'
    relative paths are relative to."""
    from ._registry import default_registry

    reg = registry if registry is not None else default_registry()
    doc = spec.model_dump() if isinstance(spec, Spec) else read_spec_document(spec)
    problems: list[str] = []
    top: Spec | None = None
    try:
        top = Spec.model_validate(doc)
    except ValidationError as e:
        problems += format_validation_error(e)
    name = doc.get("family")
    family_cls = reg.get(name) if isinstance(name, str) else None
    if isinstance(name, str) and name and family_cls is None:
        installed = ", ".join(sorted(reg.families())) or "none"
        raise SpecError(f"unknown family {name!r}; installed families: {installed}")
    params: FamilyParams | None = None
    raw_params = doc.get("params", {})
    # A spec file's relative paths (a tokenizer's, say) are relative to the file, wherever
    # the process runs: params validators find its folder in the validation context.
    if spec_dir is None and _is_path(spec):
        spec_dir = Path(spec).resolve().parent  # type: ignore[arg-type]
    context = {} if spec_dir is None else {"spec_dir": spec_dir}
    if family_cls is not None and isinstance(raw_params, dict):
        try:
            params = family_cls.Params.model_validate(raw_params, context=context)
        except ValidationError as e:
            problems += format_validation_error(e, prefix="params")
    if problems:
        raise SpecError("invalid spec: " + "; ".join(problems))
    assert top is not None and family_cls is not None and params is not None
    try:
        defaults = family_cls.decode_defaults_for(params)
    except Exception as e:
        raise PluginError(
            f"family {family_cls.name!r} failed in decode_defaults_for: {type(e).__name__}: {e}"
        ) from e
    if not isinstance(defaults, DecodeDefaults):
        raise PluginError(
            f"family {family_cls.name!r}: decode_defaults_for() must return DecodeDefaults"
        )
    given = top.decode
    modes = given.source_modes if given.source_modes is not None else defaults.source_modes
    decode = DecodeOptions(
        alpha=given.alpha if given.alpha is not None else defaults.alpha,
        exif_orientation=(
            given.exif_orientation
            if given.exif_orientation is not None
            else defaults.exif_orientation
        ),
        source_modes=modes,
    )
    resolved = top.model_copy(update={"params": params.model_dump(mode="json"), "decode": decode})
    reason = defaults.source_modes_reason if modes == defaults.source_modes else None
    return ResolvedSpec(resolved, family_cls, params, reason)


def spec_json_schema(family: type[Family[Any]]) -> dict[str, Any]:
    """JSON Schema of the whole spec document with ``family``'s params filled in."""
    try:
        family.Params()
        params_default: Any = Field(default_factory=family.Params)
    except ValidationError:
        params_default = ...
    only_this: Any = Literal[family.name]
    model = create_model(
        f"Spec_{family.name}",
        __base__=Spec,
        family=(only_this, ...),
        params=(family.Params, params_default),
    )
    schema = model.model_json_schema()
    schema["title"] = f"sglang-mm spec for family {family.name!r}"
    return schema


__all__ = [
    "CacheOptions",
    "DecodeOptions",
    "FetchPolicy",
    "Limits",
    "ResolvedSpec",
    "Spec",
    "load_spec",
    "read_spec_document",
    "spec_fingerprint",
    "spec_json_schema",
]
