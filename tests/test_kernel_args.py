"""Kernel arguments out of range are `KernelArgumentError`s naming the argument, never
pyo3's `OverflowError` or `TypeError` (issue 9)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sglang_mm_core import _native
from sglang_mm_core.errors import KernelArgumentError, MmError

BAD = [-1, 2**70, True, 1.5, "3"]
PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
    "0000000c4944415408d763f8cfc0000003010100c9fe92ef0000000049454e44ae426082"
)


@pytest.mark.parametrize("bad", BAD, ids=repr)
@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("max_pixels", lambda v: _native.image_decode_rgb(PNG_1x1, max_pixels=v)),
        ("max_side", lambda v: _native.image_decode_rgb(PNG_1x1, max_side=v)),
        ("max_pixels", lambda v: _native.image_dimensions(PNG_1x1, max_pixels=v)),
        ("max_side", lambda v: _native.image_dimensions(PNG_1x1, max_side=v)),
        ("out_w", lambda v: _native.resize_rgb(np.zeros((2, 2, 3), np.uint8), v, 1)),
        ("out_h", lambda v: _native.resize_rgb(np.zeros((2, 2, 3), np.uint8), 1, v)),
        ("threads", lambda v: _native.resize_rgb(np.zeros((2, 2, 3), np.uint8), 1, 1, threads=v)),
        ("w", lambda v: _native.scaled_dims(v, 10, 0.5)),
        ("cap", lambda v: _native.scaled_dims(10, 10, 0.5, v)),
    ],
)
def test_out_of_range_argument_is_typed(name: str, call: Any, bad: Any) -> None:
    with pytest.raises(KernelArgumentError, match=f"{name} must be an integer") as info:
        call(bad)
    assert isinstance(info.value, MmError)


def test_in_range_arguments_still_work() -> None:
    assert _native.image_decode_rgb(PNG_1x1, max_pixels=1, max_side=1).shape == (1, 1, 3)
    assert _native.image_dimensions(PNG_1x1, max_pixels=2**64 - 1) == (1, 1)
    assert _native.resize_rgb(np.zeros((2, 2, 3), np.uint8), 1, 1, threads=2).shape == (1, 1, 3)
    assert _native.scaled_dims(10, 10, 0.5, None) == _native.scaled_dims(10, 10, 0.5)


@pytest.mark.parametrize("frac", [float("inf"), float("nan"), 0.0, -0.5])
def test_scale_fraction_out_of_range_is_typed(frac: float) -> None:
    # inf once gave (4294967295, 4294967295).
    with pytest.raises(KernelArgumentError, match="frac must be a finite number > 0"):
        _native.scaled_dims(10, 10, frac)
