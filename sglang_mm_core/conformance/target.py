"""What the suite checks: one family under one spec, with the registry that knows it."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._driver import Pipeline
from .._family import Family
from .._registry import FamilyInfo, Registry, default_registry
from .._spec import ResolvedSpec, load_spec, read_spec_document


class ConformanceTarget:
    """A family under test: a spec document plus the registry that resolves its family.
    Build one from a family class (`from_family`, registered in a private registry), from a
    spec (`from_spec`), or for every installed family (`installed_targets`)."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        registry: Registry,
        id: str | None = None,
        *,
        spec_dir: Path | None = None,
    ):
        self.spec = dict(spec)
        self.registry = registry
        #: The folder of the spec file the document came from (its relative paths' base).
        self.spec_dir = spec_dir
        self._id = id
        self._lock = threading.Lock()
        self._resolved: ResolvedSpec | None = None
        self._family: Family[Any] | None = None

    @property
    def id(self) -> str:
        """The test id prefix: the family, plus ``[k=v,...]`` for the params that differ from
        the defaults and any other spec field (`spec_id`); settable."""
        if self._id is None:
            self._id = spec_id(self.spec, self._params_diff())
        return self._id

    @id.setter
    def id(self, value: str) -> None:
        self._id = value

    def _params_diff(self) -> dict[str, Any]:
        """The params that differ from the family's defaults (the spec's own params when it
        cannot be resolved or the params have no defaults)."""
        raw = self.spec.get("params")
        given: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
        try:
            params = self.resolved.params
            defaults = type(params)().model_dump(mode="json")
        except Exception:  # unresolvable spec or required params: show what was written
            return given
        return {k: v for k, v in params.model_dump(mode="json").items() if defaults.get(k) != v}

    @classmethod
    def from_family(
        cls, family: type[Family[Any]], params: Mapping[str, Any] | None = None
    ) -> ConformanceTarget:
        """A family class not (necessarily) installed: registered in a private registry."""
        reg = Registry()
        reg.register_family(family)
        spec: dict[str, Any] = {"family": family.name}
        if params is not None:
            spec["params"] = dict(params)
        return cls(spec, reg)

    @classmethod
    def from_spec(
        cls, spec: str | Path | Mapping[str, Any], registry: Registry | None = None
    ) -> ConformanceTarget:
        doc = read_spec_document(spec)
        folder = Path(spec).resolve().parent if isinstance(spec, (str, Path)) else None
        return cls(doc, registry if registry is not None else default_registry(), spec_dir=folder)

    def __repr__(self) -> str:
        return f"ConformanceTarget({self.id!r})"

    @property
    def resolved(self) -> ResolvedSpec:
        with self._lock:
            if self._resolved is None:
                self._resolved = load_spec(
                    self.spec, registry=self.registry, spec_dir=self.spec_dir
                )
            return self._resolved

    @property
    def family_class(self) -> type[Family[Any]]:
        return self.resolved.family

    @property
    def family(self) -> Family[Any]:
        """One family instance, shared by the checks (as a pipeline shares it across threads)."""
        resolved = self.resolved
        with self._lock:
            if self._family is None:
                self._family = resolved.family(resolved.params)
            return self._family

    @property
    def info(self) -> FamilyInfo | None:
        return self.registry.info(str(self.spec.get("family")))

    @property
    def installed(self) -> bool:
        """Whether the family came from an installed distribution's entry point."""
        info = self.info
        return info is not None and info.distribution != "in-process"

    def pipeline(self, threads: int | None = None) -> Pipeline:
        """A fresh pipeline for this spec; ``threads`` overrides the spec's pool size."""
        doc = dict(self.spec)
        if threads is not None:
            doc["threads"] = threads
        return Pipeline(load_spec(doc, registry=self.registry, spec_dir=self.spec_dir))


_ID_BUDGET = 64


def _id_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def spec_id(spec: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """``family[k=v,...]``: the ``params`` given (sorted) and the spec's other fields
    (``decode.alpha=drop``). When they do not fit in 64 characters, the ones that fit are
    followed by ``+N~hash`` (N more, hash = 8 hex digits of them all), so ids stay short,
    readable and distinct. The bare family name when there is nothing to show."""
    name = str(spec.get("family", "?"))
    fields: dict[str, Any] = {k: v for k, v in params.items()}
    for key, value in spec.items():
        if key in ("family", "params"):
            continue
        if isinstance(value, Mapping):
            fields.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            fields[key] = value
    if not fields:
        return name
    parts = [f"{k}={_id_value(fields[k])}" for k in sorted(fields)]
    if len(",".join(parts)) <= _ID_BUDGET:
        return f"{name}[{','.join(parts)}]"
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:8]
    shown: list[str] = []
    for part in parts:
        if len(",".join([*shown, part])) > _ID_BUDGET - 12:
            break
        shown.append(part)
    return f"{name}[{','.join([*shown, f'+{len(parts) - len(shown)}~{digest}'])}]"


def installed_targets(
    families: str | list[str] | None = None, registry: Registry | None = None
) -> list[ConformanceTarget]:
    """One target per installed family (default params), optionally only the named ones
    (a list, or a comma-separated string)."""
    reg = registry if registry is not None else default_registry()
    known = reg.families()
    if isinstance(families, str):
        families = [f.strip() for f in families.split(",") if f.strip()]
    names = sorted(known) if not families else families
    # a named family of a plugin that failed to load (or that cannot be built): its PluginError
    unknown = [n for n in names if (reg.get(n) if families else known.get(n)) is None]
    if unknown:
        from ..errors import SpecError

        raise SpecError(
            f"unknown family {', '.join(map(repr, unknown))}; installed families: "
            f"{', '.join(sorted(known)) or 'none'}"
        )
    return [ConformanceTarget({"family": n}, reg) for n in names]


__all__ = ["ConformanceTarget", "installed_targets", "spec_id"]
