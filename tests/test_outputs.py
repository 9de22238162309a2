"""The one output layout (sglang_mm_core._outputs): every field of an `MmOutput` round-trips bit
for bit through ``.safetensors`` and ``.npz`` files and bodies, the files are valid for the
safetensors library and numpy, and files of the legacy layout (the CLI's before
``format_version``, written here by that writer's code, frozen) still load."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import safetensors
import safetensors.numpy
from safetensors.numpy import save_file

from sglang_mm_core import (
    CodecError,
    Geometry,
    MmError,
    MmInput,
    MmItem,
    MmOutput,
    MmRequestError,
    Registry,
    Tensor,
    load_output,
    pipeline_from_spec,
    save_output,
)
from sglang_mm_core._outputs import (
    FORMAT_VERSION,
    encode_safetensors,
    output_arrays,
    output_tensors,
)
from sglang_mm_core.plugin import MRope, Rope1D


def _items(rng: np.random.Generator) -> list[MmItem]:
    """Every dtype tag: bfloat16 bits, float32, uint8, uint16, int32 (empty) and int64."""
    return [
        MmItem(
            Tensor(rng.integers(0, 2**16, size=(6, 4), dtype=np.uint16), "bfloat16"),
            {
                "grid": Tensor(np.array([2, 3], dtype=np.int64), "int64"),
                "mask": Tensor(np.array([[1, 0, 1]], dtype=np.uint8), "uint8"),
                "empty": Tensor(np.zeros((0, 3), dtype=np.int32), "int32"),
            },
            (1 << 64) - 5,
            Geometry(16, 24, (2, 3)),
            6,
        ),
        MmItem(
            Tensor(rng.standard_normal((3, 5)).astype(np.float32), "float32"),
            {"u16": Tensor(np.arange(4, dtype=np.uint16), "uint16")},
            12345,
            Geometry(8, 8, (1, 1, 3)),
            3,
        ),
    ]


def synthetic(rid: str | None, mrope: bool, n_items: int = 2) -> MmOutput:
    rng = np.random.default_rng(7)
    items = _items(rng)[:n_items]
    offsets = [(1, 6), (9, 11)][:n_items]
    ids = np.arange(14, dtype=np.int64) * 1_000_000_007
    positions: MRope | Rope1D = Rope1D(14)
    if mrope:
        positions = MRope(rng.integers(-5, 2**40, size=(3, 14), dtype=np.int64), -7)
    return MmOutput(ids, items, offsets, positions, "toy", "f" * 64, rid=rid)


def assert_same(got: MmOutput, want: MmOutput, geometry: bool = True) -> None:
    """Every field, bit for bit (``geometry=False``: the legacy layout did not store it)."""
    assert (got.family, got.spec_fingerprint, got.rid) == (
        want.family,
        want.spec_fingerprint,
        want.rid,
    )
    assert got.input_ids.dtype == np.int64
    np.testing.assert_array_equal(got.input_ids, want.input_ids)
    assert [tuple(o) for o in got.offsets] == [tuple(o) for o in want.offsets]
    assert type(got.positions) is type(want.positions)
    if isinstance(want.positions, MRope):
        assert isinstance(got.positions, MRope)
        assert got.positions.delta == want.positions.delta
        assert got.positions.positions.dtype == np.int64
        np.testing.assert_array_equal(got.positions.positions, want.positions.positions)
    else:
        assert got.positions == want.positions
    assert len(got.items) == len(want.items)
    for g, w in zip(got.items, want.items, strict=True):
        assert (g.hash, g.tokens) == (w.hash, w.tokens)
        if geometry:
            assert g.geometry == w.geometry
        for a, b in [(g.feature, w.feature), *((g.aux[k], w.aux[k]) for k in w.aux)]:
            assert a.dtype == b.dtype and a.array.dtype == b.array.dtype
            assert a.shape == b.shape
            np.testing.assert_array_equal(a.array, b.array)
        assert sorted(g.aux) == sorted(w.aux)


CASES = [
    pytest.param(None, False, 2, id="rope1d"),
    pytest.param("ünïcode rid ✓", True, 2, id="mrope-rid"),
    pytest.param("r", True, 0, id="no-items"),
]


@pytest.mark.parametrize(("rid", "mrope", "n"), CASES)
@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_every_field_round_trips(
    tmp_path: Path, rid: str | None, mrope: bool, n: int, suffix: str
) -> None:
    out = synthetic(rid, mrope, n)
    path = tmp_path / f"out{suffix}"
    save_output(out, path)
    back = load_output(path)
    assert_same(back, out)
    assert back.extra == {}
    assert_same(load_output(str(path)), out)
    assert_same(load_output(path.read_bytes()), out)


def test_the_server_body_is_the_file(tmp_path: Path) -> None:
    out = synthetic("x", True)
    body = b"".join(bytes(c) for c in encode_safetensors(out))
    path = tmp_path / "out.safetensors"
    save_output(out, path)
    assert path.read_bytes() == body
    assert_same(load_output(memoryview(body)), out)


def test_metadata_and_storage_as_documented(tmp_path: Path) -> None:
    out = synthetic("x", True)
    save_output(out, tmp_path / "o.safetensors")
    body = (tmp_path / "o.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", body[:8])
    header = json.loads(body[8 : 8 + n])
    meta = header.pop("__metadata__")
    assert set(meta) == {
        "format_version",
        "family",
        "spec_fingerprint",
        "rid",
        "offsets",
        "hashes",
        "positions",
        "mrope_delta",
        "length",
        "items",
        "dtypes",
    }
    assert meta["format_version"] == FORMAT_VERSION == "1"
    assert set(header) == {
        "input_ids",
        "positions",
        "items.0.feature",
        "items.0.grid",
        "items.0.mask",
        "items.0.empty",
        "items.1.feature",
        "items.1.u16",
    }
    assert header["items.0.feature"]["dtype"] == "BF16"
    assert header["items.1.u16"]["dtype"] == "U16"
    assert json.loads(meta["dtypes"])["items.0.feature"] == "bfloat16"
    item = {"height": 8, "width": 8, "grid": [1, 1, 3], "tokens": 3, "modality": "image"}
    assert json.loads(meta["items"])[1] == item
    # The safetensors library validates and reads it.
    assert safetensors.deserialize(body)
    loaded = safetensors.numpy.load(
        b"".join(bytes(c) for c in encode_safetensors(synthetic(None, False, 0)))
    )
    assert loaded["input_ids"].dtype == np.int64
    # .npz: bfloat16 as its uint16 bits, the tag in the metadata.
    save_output(out, tmp_path / "o.npz")
    with np.load(tmp_path / "o.npz") as z:
        assert z["items.0.feature"].dtype == np.uint16
        np.testing.assert_array_equal(z["items.0.feature"], out.items[0].feature.array)
        assert json.loads(str(z["__metadata__"])) == output_tensors(out)[1]


# -- files of another layout ---------------------------------------------------------------


def _save_without_version(out: MmOutput, path: Path) -> None:
    arrays, meta = output_arrays(out)
    del meta["format_version"]
    if path.suffix == ".safetensors":
        save_file(arrays, str(path), metadata=meta)
    else:
        np.savez(path, **arrays, __metadata__=np.array(json.dumps(meta)))  # type: ignore[arg-type]


@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_a_file_without_format_version_is_refused(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"old{suffix}"
    _save_without_version(synthetic("r", True, 1), path)
    with pytest.raises(CodecError, match=r"format_version None is not one this release reads"):
        load_output(path)


def test_a_real_pipeline_output_round_trips(tmp_path: Path, registry: Registry) -> None:
    from core_helpers import png_bytes

    rng = np.random.default_rng(3)
    imgs = [png_bytes(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)) for h, w in [(20, 36)]]
    with pipeline_from_spec({"family": "toy_mrope"}, registry=registry) as pipe:
        prompt = list(pipe.family.example_prompt(1))
        out = pipe.process(MmInput(input_ids=prompt, images=imgs, rid="p"))
    for suffix in (".safetensors", ".npz"):
        save_output(out, tmp_path / f"o{suffix}")
        assert_same(load_output(tmp_path / f"o{suffix}"), out)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x05\x00\x00\x00\x00\x00\x00\x00{}",
        struct.pack("<Q", 2) + b"[]",
        struct.pack("<Q", 2) + b"{}",
        struct.pack("<Q", 4) + b"nope",
        b"PK\x03\x04 not a zip",
    ],
)
def test_malformed_inputs_are_codec_errors(body: bytes) -> None:
    with pytest.raises(CodecError) as info:
        load_output(body)
    assert isinstance(info.value, MmError) and isinstance(info.value, ValueError)


def test_unknown_version_and_missing_file(tmp_path: Path) -> None:
    out = synthetic(None, False)
    tensors, meta = output_tensors(out)
    meta = {**meta, "format_version": "9"}
    arrays = {name: t.array for name, t in tensors}
    save_file(arrays, str(tmp_path / "v9.safetensors"), metadata=meta)
    with pytest.raises(CodecError, match=r"format_version '9' is not one this release reads"):
        load_output(tmp_path / "v9.safetensors")
    with pytest.raises(CodecError, match="cannot read output file"):
        load_output(tmp_path / "missing.safetensors")
    with pytest.raises(MmRequestError, match=r"--out must end in \.safetensors or \.npz"):
        save_output(out, tmp_path / "o.bin")
