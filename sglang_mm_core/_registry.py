"""Plugin discovery: pluggy under the project name ``sglang_mm``, entry point group
``sglang_mm``. A plugin module implements the hook `sglang_mm_families` and returns the family
classes it offers; the registry refuses two families with one name, naming both distributions.

``SGLANG_MM_PLUGINS`` picks which entry points load: unset = all, a comma list = those entry
point names, empty = none (a locked-down server can then register families in-process).

A plugin that fails to load (import error, malformed entry point, a hook that raises, a family
that cannot be built from its default params) never hides the others: it is kept as a
`BrokenPlugin`, listed by `Registry.broken`, and only a spec naming its family fails, with the
`PluginError` naming its distribution."""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pluggy
from pydantic import BaseModel

from ._family import Family
from .errors import PluginError

PROJECT = "sglang_mm"
ENTRY_POINT_GROUP = "sglang_mm"
ALLOWLIST_ENV = "SGLANG_MM_PLUGINS"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class HookSpecs:
    """The hooks a plugin module may implement."""

    @hookspec
    def sglang_mm_families(self) -> Sequence[type[Family[Any]]]:  # type: ignore[empty-body]
        """The family classes this plugin offers."""

    @hookspec
    def sglang_mm_hf_image_processors(self) -> Sequence[type]:  # type: ignore[empty-body]
        """The transformers image processor classes this plugin offers (subclasses of
        `sglang_mm_core.hf.ImageProcessor`); called only by `sglang_mm_core.hf`, so a plugin
        imports transformers inside the hook, never at import time."""


@dataclass(frozen=True)
class FamilyInfo:
    """Where a family came from, for listings and error messages."""

    family: type[Family[Any]]
    plugin: str
    distribution: str
    version: str

    @property
    def name(self) -> str:
        return self.family.name

    @property
    def origin(self) -> str:
        return f"{self.distribution} {self.version}".strip() + f" (plugin {self.plugin!r})"


@dataclass(frozen=True)
class BrokenPlugin:
    """An installed (or registered) plugin, or one family of it, that failed to load."""

    plugin: str
    distribution: str
    version: str
    error: PluginError
    #: The family names concerned, when known (empty when the module itself did not load:
    #: the entry point's name, by convention the family's, then stands for it).
    families: tuple[str, ...] = ()

    @property
    def origin(self) -> str:
        return f"{self.distribution} {self.version}".strip() + f" (plugin {self.plugin!r})"

    def claims(self, family: str) -> bool:
        """Whether a spec naming ``family`` may have meant this plugin."""
        return family in self.families or (not self.families and family == self.plugin)


@dataclass(frozen=True)
class _EntryPoint:
    ep: importlib.metadata.EntryPoint
    distribution: str
    version: str


def _allowlist() -> set[str] | None:
    raw = os.environ.get(ALLOWLIST_ENV)
    if raw is None:
        return None
    return {name.strip() for name in raw.split(",") if name.strip()}


def installed_entry_points() -> dict[str, _EntryPoint]:
    """Entry points of the group by name. One name claimed by two distributions is refused here,
    because pluggy would silently load only the first."""
    found: dict[str, _EntryPoint] = {}
    for dist in importlib.metadata.distributions():
        dist_name = dist.metadata["Name"] or "?"
        for ep in dist.entry_points:
            if ep.group != ENTRY_POINT_GROUP:
                continue
            other = found.get(ep.name)
            if other is not None and other.distribution != dist_name:
                raise PluginError(
                    f"entry point {ep.name!r} of group {ENTRY_POINT_GROUP!r} is declared by both "
                    f"{other.distribution} {other.version} and {dist_name} {dist.version}"
                )
            if other is None:
                found[ep.name] = _EntryPoint(ep, dist_name, dist.version)
    return found


def _is_family(obj: Any) -> bool:
    return (
        isinstance(obj, type)
        and issubclass(obj, Family)
        and isinstance(getattr(obj, "name", None), str)
        and bool(obj.name)
        and isinstance(getattr(obj, "Params", None), type)
        and issubclass(obj.Params, BaseModel)
    )


class Registry:
    """The families one process knows: installed plugins (`load_entry_points`) plus any
    registered in-process (`register`, `register_family`)."""

    def __init__(self) -> None:
        self._pm = pluggy.PluginManager(PROJECT)
        self._pm.add_hookspecs(HookSpecs)
        self._origin: dict[str, tuple[str, str]] = {}  # plugin name -> (distribution, version)
        self._families: dict[str, FamilyInfo] | None = None
        self._load_failures: dict[str, BrokenPlugin] = {}  # plugin name -> why it did not load
        self._hook_failures: dict[str, BrokenPlugin] = {}  # the same, from the last families()
        self._probed_ok: set[type[Family[Any]]] = set()
        self._probe_failures: dict[type[Family[Any]], BrokenPlugin] = {}
        self._lock = threading.RLock()

    def load_entry_points(self) -> int:
        """Load the installed plugins the allowlist lets through; returns how many loaded."""
        allow = _allowlist()
        available = installed_entry_points()
        if allow is not None:
            missing = sorted(allow - set(available))
            if missing:
                raise PluginError(
                    f"{ALLOWLIST_ENV} names {', '.join(missing)}, but no installed distribution "
                    f"declares such an entry point (installed: {', '.join(sorted(available))})"
                )
        count = 0
        with self._lock:
            for name, entry in sorted(available.items()):
                if (allow is not None and name not in allow) or self._pm.has_plugin(name):
                    continue
                self._load_failures.pop(name, None)
                try:
                    self._load_one(name, entry)
                except PluginError as e:
                    self._load_failures[name] = BrokenPlugin(
                        name, entry.distribution, entry.version, e
                    )
                    continue
                finally:
                    self._families = None
                count += 1
        return count

    def _load_one(self, name: str, entry: _EntryPoint) -> None:
        """Import one entry point and register it, or raise the `PluginError` saying why not
        (leaving nothing of it registered)."""
        where = f"plugin {name!r} of {entry.distribution} {entry.version}"
        value = entry.ep.value
        if entry.ep.pattern.fullmatch(value) is None:
            raise PluginError(
                f"{where}: malformed entry point {name} = {value!r} (expected 'module' or "
                "'module:attribute')"
            )
        try:
            plugin = entry.ep.load()
        except Exception as e:
            raise PluginError(f"{where} failed to load: {type(e).__name__}: {e}") from e
        try:
            self._pm.register(plugin, name=name)
        except Exception as e:
            raise PluginError(f"{where} cannot be registered: {e}") from e
        self._origin[name] = (entry.distribution, entry.version)
        try:
            self._check_pending()
        except PluginError:
            self._pm.unregister(name=name)
            self._origin.pop(name, None)
            raise

    def register(self, plugin: object, name: str | None = None) -> str:
        """Register a plugin object or module in-process (tests, embedders)."""
        with self._lock:
            try:
                plugin_name = self._pm.register(plugin, name=name)
            except ValueError as e:
                raise PluginError(f"cannot register plugin {name or plugin!r}: {e}") from e
            assert plugin_name is not None
            self._origin.setdefault(plugin_name, ("in-process", ""))
            self._families = None
            try:
                self._check_pending()
                self.families()
                failure = self._hook_failures.get(plugin_name)
                if failure is not None:
                    raise failure.error
            except PluginError:
                self._pm.unregister(name=plugin_name)
                self._origin.pop(plugin_name, None)
                self._families = None
                raise
        return plugin_name

    def register_family(self, *families: type[Family[Any]], name: str | None = None) -> str:
        """Register family classes in-process without writing a plugin module."""
        holder = _InProcessPlugin(families)
        return self.register(
            holder, name=name or "in-process:" + ",".join(f.name for f in families)
        )

    def unregister(self, name: str) -> None:
        with self._lock:
            self._pm.unregister(name=name)
            self._origin.pop(name, None)
            self._families = None

    def _check_pending(self) -> None:
        try:
            self._pm.check_pending()
        except pluggy.PluginValidationError as e:
            raise PluginError(f"plugin {e.plugin!r} implements an unknown hook: {e}") from e

    def families(self) -> dict[str, FamilyInfo]:
        """Every usable family by name; two with one name is a `PluginError` naming both. A
        plugin whose hook fails is left out (see `broken`)."""
        with self._lock:
            if self._families is not None:
                return self._families
            out: dict[str, FamilyInfo] = {}
            self._hook_failures = {}
            for impl in self._pm.hook.sglang_mm_families.get_hookimpls():
                plugin_name = impl.plugin_name
                dist, version = self._origin.get(plugin_name, ("in-process", ""))
                try:
                    where = f"plugin {plugin_name!r} of {dist} {version}".rstrip()
                    offered = self._offered(impl.function, where)
                except PluginError as e:
                    self._hook_failures[plugin_name] = BrokenPlugin(plugin_name, dist, version, e)
                    continue
                for fam in offered:
                    info = FamilyInfo(fam, plugin_name, dist, version)
                    if fam in self._probe_failures:
                        continue
                    other = out.get(fam.name)
                    if other is not None and other.family is not fam:
                        raise PluginError(
                            f"family {fam.name!r} is provided by both {other.origin} and "
                            f"{info.origin}"
                        )
                    out[fam.name] = info
            self._families = out
            return out

    @staticmethod
    def _offered(hook: Any, where: str) -> list[type[Family[Any]]]:
        try:
            offered = hook()
        except Exception as e:
            raise PluginError(
                f"{where}: sglang_mm_families() failed: {type(e).__name__}: {e}"
            ) from e
        if not isinstance(offered, (list, tuple)):
            raise PluginError(
                f"{where}: sglang_mm_families() must return a list of family classes, got "
                f"{type(offered).__name__}"
            )
        for fam in offered:
            if not _is_family(fam):
                raise PluginError(
                    f"{where}: sglang_mm_families() returned {fam!r}, which is not a Family "
                    "subclass with a name and Params"
                )
        return list(offered)

    def hf_image_processors(self) -> list[type]:
        """Every installed plugin's transformers image processor classes, in plugin order; a
        failing hook is a `PluginError` naming the plugin (the caller asked for them)."""
        with self._lock:
            impls = list(self._pm.hook.sglang_mm_hf_image_processors.get_hookimpls())
        out: list[type] = []
        for impl in impls:
            dist, version = self._origin.get(impl.plugin_name, ("in-process", ""))
            where = f"plugin {impl.plugin_name!r} of {dist} {version}".rstrip()
            try:
                offered = impl.function()
            except Exception as e:
                raise PluginError(
                    f"{where}: sglang_mm_hf_image_processors() failed: {type(e).__name__}: {e}"
                ) from e
            if not isinstance(offered, (list, tuple)) or not all(
                isinstance(c, type) for c in offered
            ):
                raise PluginError(
                    f"{where}: sglang_mm_hf_image_processors() must return a list of classes"
                )
            out.extend(c for c in offered if c not in out)
        return out

    def broken(self, *, probe: bool = False) -> list[BrokenPlugin]:
        """What failed to load: plugins (import, entry point, hook) and families that cannot
        be built from their default params. ``probe=True`` first tries to build every family,
        as `get` does for the one it returns."""
        with self._lock:
            if probe:
                for info in list(self.families().values()):
                    try:
                        self._probe(info)
                    except PluginError:
                        pass
            self.families()
            found = [*self._load_failures.values(), *self._hook_failures.values()]
            found += [b for b in self._probe_failures.values() if self._pm.has_plugin(b.plugin)]
            return sorted(found, key=lambda b: (b.plugin, b.families))

    def _probe(self, info: FamilyInfo) -> None:
        """Build the family once from its default params (when it has them; the conformance
        suite requires they build): a class whose constructor raises is broken for every
        spec, so it is reported once, naming the distribution, and left out of `families`."""
        fam = info.family
        failure = self._probe_failures.get(fam)
        if failure is not None:
            raise failure.error
        if fam in self._probed_ok:
            return
        try:
            params = fam.Params()
        except Exception:  # required params: only a spec can build it
            self._probed_ok.add(fam)
            return
        try:
            fam(params)
        except Exception as e:
            err = PluginError(
                f"family {fam.name!r} of {info.origin} cannot be built from its default "
                f"params: {type(e).__name__}: {e}"
            )
            err.__cause__ = e
            self._probe_failures[fam] = BrokenPlugin(
                info.plugin, info.distribution, info.version, err, (fam.name,)
            )
            self._families = None
            raise err from e
        self._probed_ok.add(fam)

    def get(self, name: str) -> type[Family[Any]] | None:
        """The family named ``name``, None when no plugin offers it. A family whose plugin
        failed to load (or whose class cannot be built) is a `PluginError` naming the
        distribution."""
        with self._lock:
            info = self.families().get(name)
            try:
                if info is not None:
                    self._probe(info)
                    return info.family
                failure = next((b for b in self.broken() if b.claims(name)), None)
                if failure is None:
                    return None
                raise failure.error
            except PluginError as e:
                cause = e.__cause__ if e.__cause__ is not None else e
                raise PluginError(f"family {name!r} is unavailable: {e}") from cause

    def info(self, name: str) -> FamilyInfo | None:
        return self.families().get(name)


class _InProcessPlugin:
    def __init__(self, families: Iterable[type[Family[Any]]]) -> None:
        self._families = tuple(families)

    @hookimpl
    def sglang_mm_families(self) -> Sequence[type[Family[Any]]]:
        return self._families


_default: Registry | None = None
_default_lock = threading.Lock()


def default_registry() -> Registry:
    """The process-wide registry, loading the installed plugins on first use."""
    global _default
    with _default_lock:
        if _default is None:
            reg = Registry()
            reg.load_entry_points()
            _default = reg
        return _default


def reset_default_registry() -> None:
    """Forget the process-wide registry (it reloads on next use, e.g. after installs)."""
    global _default
    with _default_lock:
        _default = None


def register_family(*families: type[Family[Any]], name: str | None = None) -> str:
    """Register family classes in the process-wide registry; returns the plugin name."""
    return default_registry().register_family(*families, name=name)


def unregister(name: str) -> None:
    """Remove an in-process registration from the process-wide registry."""
    default_registry().unregister(name)


__all__ = [
    "ALLOWLIST_ENV",
    "ENTRY_POINT_GROUP",
    "BrokenPlugin",
    "FamilyInfo",
    "HookSpecs",
    "Registry",
    "default_registry",
    "hookimpl",
    "hookspec",
    "installed_entry_points",
    "register_family",
    "reset_default_registry",
    "unregister",
]
