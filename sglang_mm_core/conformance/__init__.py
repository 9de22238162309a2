"""The plugin conformance suite: the family contract of docs/plugins.md, as checks a plugin author
runs in their own test suite.

    from sglang_mm_core.conformance import parametrize_with_checks
    from my_plugin import MyFamily

    @parametrize_with_checks(MyFamily)
    def test_conformance(target, check):
        check(target)

Each check becomes one test (ids like ``my_family-check_layout``). ``sglang-mm conformance``
runs the same checks on every installed family."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .._family import Family
from .._registry import Registry
from .checks import ALL_CHECKS, Check, checks_for, compact_round_trips, process_item_and_compact
from .images import encode_png, generated_image
from .target import ConformanceTarget, installed_targets

TargetLike = type[Family[Any]] | ConformanceTarget | Mapping[str, Any] | str | Path
_F = TypeVar("_F", bound=Callable[..., Any])


def as_target(obj: TargetLike, registry: Registry | None = None) -> ConformanceTarget:
    """A family class (default params, registered privately), a spec (mapping, JSON path) or
    a ready `ConformanceTarget`."""
    if isinstance(obj, ConformanceTarget):
        return obj
    if isinstance(obj, type) and issubclass(obj, Family):
        if registry is None:
            return ConformanceTarget.from_family(obj)
        return ConformanceTarget({"family": obj.name}, registry)
    return ConformanceTarget.from_spec(obj, registry)


def iter_checks(
    targets: TargetLike | Iterable[TargetLike], registry: Registry | None = None
) -> list[tuple[ConformanceTarget, Check]]:
    """Every (target, check) pair that applies."""
    if isinstance(targets, (type, ConformanceTarget, Mapping, str, Path)):
        items: list[TargetLike] = [targets]
    else:
        items = list(targets)
    pairs = []
    for obj in items:
        target = as_target(obj, registry)
        pairs += [(target, check) for check in checks_for(target)]
    return pairs


def parametrize_with_checks(
    targets: TargetLike | Iterable[TargetLike], *, registry: Registry | None = None
) -> Callable[[_F], _F]:
    """A ``pytest.mark.parametrize`` over ``(target, check)``: one test per applicable check.
    The test body is ``check(target)``."""
    import pytest

    pairs = iter_checks(targets, registry)
    ids = [f"{t.id}-{c.__name__}" for t, c in pairs]
    mark: Callable[[_F], _F] = pytest.mark.parametrize(("target", "check"), pairs, ids=ids)
    return mark


__all__ = [
    "ALL_CHECKS",
    "Check",
    "ConformanceTarget",
    "as_target",
    "checks_for",
    "compact_round_trips",
    "encode_png",
    "generated_image",
    "installed_targets",
    "iter_checks",
    "parametrize_with_checks",
    "process_item_and_compact",
]
