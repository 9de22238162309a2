"""The compact carrier against an element-by-element numpy reference of its rule, written
here without the carrier's broadcasting: every full index is unravelled on its own."""

from __future__ import annotations

import numpy as np
import pytest

from sglang_mm_core import CompactTensor, MmInput, Tensor, pipeline_from_spec
from sglang_mm_core.errors import MmRequestError
from sglang_mm_core.plugin import CompactTensor as PluginCompactTensor


def reference_expand(c: CompactTensor) -> np.ndarray:
    """The documented rule, one element at a time (vectorised over the flat index only)."""
    v = c.codes.shape
    wide = list(v)
    wide[c.repeat_axis] = c.repeats
    idx = np.unravel_index(np.arange(int(np.prod(wide))), wide)
    code_idx = list(idx)
    code_idx[c.repeat_axis] = np.zeros_like(idx[0])
    codes = c.codes[tuple(code_idx)].astype(np.int64)
    chan = idx[c.channel_axis]
    out = c.luts[chan, codes]
    padded = np.zeros(out.shape, dtype=bool)
    for outer, inner, limit in c.pad_rules:
        padded |= idx[outer] * v[inner] + idx[inner] >= limit
    if c.pad is not None:
        out = np.where(padded, c.pad[chan], out)
    return out.reshape(c.shape)


def _qwen_like(rng: np.random.Generator, rows: int, ps: int, tps: int) -> CompactTensor:
    return CompactTensor(
        codes=rng.integers(0, 256, (rows, 3, 1, ps, ps), dtype=np.uint8),
        luts=rng.standard_normal((3, 256)).astype(np.float32),
        dtype="float32",
        shape=(rows, 3 * tps * ps * ps),
        channel_axis=1,
        repeat_axis=2,
        repeats=tps,
    )


def _inkling_like(rng, nph, npw, ps, tps, h, w) -> CompactTensor:
    return CompactTensor(
        codes=rng.integers(0, 256, (nph, npw, 1, ps, ps, 3), dtype=np.uint8),
        luts=rng.integers(0, 1 << 16, (3, 256), dtype=np.uint16),
        dtype="bfloat16",
        shape=(nph * npw, tps, ps, ps, 3),
        channel_axis=5,
        repeat_axis=2,
        repeats=tps,
        pad=rng.integers(0, 1 << 16, 3, dtype=np.uint16),
        pad_rules=((0, 3, h), (1, 4, w)),
    )


@pytest.mark.parametrize("rows,ps,tps", [(4, 14, 2), (1, 2, 1), (6, 3, 3)])
def test_table_layout_expands_like_the_reference(rows, ps, tps):
    c = _qwen_like(np.random.default_rng(rows + ps), rows, ps, tps)
    got = c.expand()
    assert isinstance(got, Tensor) and got.dtype == "float32" and got.shape == c.shape
    np.testing.assert_array_equal(got.array.view(np.uint32), reference_expand(c).view(np.uint32))
    assert c.nbytes == rows * 3 * ps * ps + 3 * 256 * 4


@pytest.mark.parametrize("nph,npw,ps,tps,h,w", [(3, 4, 5, 2, 13, 16), (1, 1, 4, 1, 1, 1)])
def test_padded_layout_expands_like_the_reference(nph, npw, ps, tps, h, w):
    c = _inkling_like(np.random.default_rng(nph * npw), nph, npw, ps, tps, h, w)
    got = c.expand()
    assert got.dtype == "bfloat16" and got.shape == c.shape
    want = reference_expand(c)
    np.testing.assert_array_equal(got.array, want)
    # The pad really shows: the last column of patches lies past the image.
    assert np.all(want.reshape(nph, npw, tps, ps, ps, 3)[:, -1, :, :, -1] == c.pad)


def test_plugin_surface_exports_the_carrier():
    assert PluginCompactTensor is CompactTensor


@pytest.mark.parametrize(
    "change",
    [
        {"codes": np.zeros((2, 3, 2, 2, 2), np.uint8)},  # repeat axis not of size 1
        {"luts": np.zeros((3, 255), np.float32)},
        {"luts": np.zeros((3, 256), np.float64)},
        {"shape": (2, 99)},
        {"dtype": "int32"},
        {"channel_axis": 7},
        {"pad_rules": ((0, 3, 1),)},  # a rule without pad values
    ],
)
def test_malformed_carriers_are_refused(change):
    base = dict(
        codes=np.zeros((2, 3, 1, 2, 2), np.uint8),
        luts=np.zeros((3, 256), np.float32),
        dtype="float32",
        shape=(2, 24),
        channel_axis=1,
        repeat_axis=2,
        repeats=2,
    )
    base.update(change)
    with pytest.raises(ValueError):
        CompactTensor(**base)


def test_equality_compares_every_part():
    rng = np.random.default_rng(3)
    a = _qwen_like(rng, 2, 2, 2)
    b = CompactTensor(a.codes.copy(), a.luts.copy(), "float32", a.shape, 1, 2, 2)
    assert a == b
    b.codes[0, 0, 0, 0, 0] ^= 1
    assert a != b


def test_compact_needs_a_family_that_offers_it(registry):
    pipe = pipeline_from_spec({"family": "toy"}, registry=registry)
    assert not pipe.family.offers_compact
    with pytest.raises(MmRequestError, match="compact"):
        pipe.process(MmInput([1, 2], []), compact=True)
    with pytest.raises(MmRequestError, match="compact"):
        pipe.process_batch([MmInput([1, 2], [])], return_exceptions=True, compact=True)


def test_tables_are_read_only_in_the_carrier():
    """A family hands every item its one table: editing an item's tables must not reach it."""
    rng = np.random.default_rng(4)
    table = rng.standard_normal((3, 256)).astype(np.float32)
    pad = np.zeros(3, dtype=np.uint16)
    a = _qwen_like(rng, 2, 2, 2)
    a = CompactTensor(a.codes, table, "float32", a.shape, 1, 2, 2)
    with pytest.raises(ValueError, match="read-only"):
        a.luts[0, 0] = 1.0
    assert table.flags.writeable  # the caller's own array is left as it was
    b = _inkling_like(rng, 2, 2, 2, 2, 3, 3)
    b = CompactTensor(b.codes, b.luts, "bfloat16", b.shape, 5, 2, 2, pad, b.pad_rules)
    with pytest.raises(ValueError, match="read-only"):
        b.pad[0] = 1
    np.testing.assert_array_equal(a.expand().array, reference_expand(a))


def test_family_tables_are_not_reachable_through_an_item():
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (56, 56), (10, 200, 30)).save(buf, "PNG")
    with pipeline_from_spec({"family": "qwen_vl", "threads": 0}) as pipe:
        req = MmInput(list(pipe.family.example_prompt(1)), [buf.getvalue()])
        first = pipe.process(req, compact=True).items[0].feature
        with pytest.raises(ValueError, match="read-only"):
            first.luts[:] = 0
        again = pipe.process(req, compact=True).items[0].feature
        np.testing.assert_array_equal(
            again.expand().array, pipe.process(req).items[0].feature.array
        )
