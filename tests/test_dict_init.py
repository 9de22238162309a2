"""The carriers' fast ``__init__`` (`dict_init`) keeps every dataclass behaviour."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from sglang_mm_core import Geometry, MmOutput, MRope
from sglang_mm_core._dict_init import dict_init


@dict_init
@dataclasses.dataclass(frozen=True)
class _Point:
    x: int
    y: int = 7
    tags: list[int] = dataclasses.field(default_factory=list)
    hidden: int = dataclasses.field(default=0, init=False)
    made: list[int] = dataclasses.field(default_factory=lambda: [1], init=False)


def test_signature_defaults_and_factories() -> None:
    a, b = _Point(1), _Point(x=2, y=3, tags=[4])
    assert (a.x, a.y, a.tags, b.x, b.y, b.tags) == (1, 7, [], 2, 3, [4])
    assert _Point(1).tags is not _Point(1).tags  # a new list each time, as with dataclasses
    assert vars(a)["hidden"] == 0 and a.made == [1] and a.made is not b.made
    with pytest.raises(TypeError):
        _Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Point(1, 2, [], 4)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Point(1, z=2)  # type: ignore[call-arg]


def test_frozen_equal_hashable_replace_and_pickle() -> None:
    g = Geometry(4, 6, (1, 2, 3))
    assert g == Geometry(height=4, width=6, grid=(1, 2, 3)) and hash(g) == hash(
        Geometry(4, 6, (1, 2, 3))
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.height = 5  # type: ignore[misc]
    assert dataclasses.replace(g, width=8) == Geometry(4, 8, (1, 2, 3))
    assert pickle.loads(pickle.dumps(g)) == g
    out = MmOutput(np.arange(3), [], [], MRope(np.zeros((3, 3), np.int64), 0), "f", "fp")
    assert out.rid is None and out.extra == {}
    back = pickle.loads(pickle.dumps(dataclasses.replace(out, rid="r")))
    assert back.rid == "r" and back.positions == out.positions
    assert repr(g) == "Geometry(height=4, width=6, grid=(1, 2, 3), seconds_per_grid_t=None)"
