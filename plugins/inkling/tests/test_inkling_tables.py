"""The family's bf16 table against the spec's float32 arithmetic, on every value of every
channel and the pad value, with two independent roundings (ml_dtypes and a bit routine); and
the original API's patches, written in this package's Rust, through that same table."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from inkling_reference import MEAN, STD, bf16_bits, normalise
from numpy.testing import assert_array_equal
from sglang_mm_inkling import InklingFamily, patchify_rgb


def _family_table() -> np.ndarray:
    """``[3, 257]`` bf16 bits of the family's table: the 256 values, then the pad value."""
    table = InklingFamily().features().table
    assert table is not None and table.dtype == "bfloat16" and table.pad is not None
    return np.concatenate([table.values, table.pad[:, None]], axis=1)


def _reference_tables() -> np.ndarray:
    values = np.arange(256, dtype=np.float32) * np.float32(1 / 255)
    raw = np.concatenate([values, [np.float32(-1 / 255)]]).astype(np.float32)
    norm = normalise(np.repeat(raw[:, None], 3, axis=1))  # [257, 3]
    return norm.T  # [3, 257]


def test_bit_routine_agrees_with_ml_dtypes_including_ties() -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal(100_000).astype(np.float32) * 4
    # Exact halfway cases: low 16 bits 0x8000, with even and odd kept halves.
    ties = (rng.integers(0x3F00, 0x4100, 1000, dtype=np.uint32) << 16) | 0x8000
    x = np.concatenate([x, ties.view(np.float32)])
    assert_array_equal(bf16_bits(x), x.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_tables_cover_all_values_and_the_pad_value() -> None:
    ref = _reference_tables()
    got = _family_table()
    assert got.shape == (3, 257) and got.dtype == np.uint16
    assert_array_equal(got, bf16_bits(ref))
    assert_array_equal(got, ref.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_pad_value_is_minus_one_over_255_normalised() -> None:
    pad = _family_table()[:, 256].view(ml_dtypes.bfloat16).astype(np.float32)
    want = ((np.float32(-1 / 255) - MEAN) / STD).astype(ml_dtypes.bfloat16).astype(np.float32)
    assert_array_equal(pad, want)


def test_patchify_uses_each_channel_table() -> None:
    # One pixel per value, every value in every channel (rolled so channels differ).
    v = np.arange(256, dtype=np.uint8)
    arr = np.stack([v, np.roll(v, 85), np.roll(v, 170)], axis=-1).reshape(16, 16, 3)
    bits = patchify_rgb(arr, 16, threads=1).reshape(-1, 16, 16, 3)
    tables = _family_table()
    for c in range(3):
        assert_array_equal(bits[0, ..., c], tables[c][arr[..., c]])
    # w == ps: the second column is all padding.
    assert_array_equal(bits[1], np.broadcast_to(tables[:, 256], (16, 16, 3)))
