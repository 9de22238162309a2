"""The answer formats: safetensors and JSON round-trip every field bit for bit, and the
safetensors body is a valid file for the safetensors library itself."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import safetensors
import safetensors.numpy
from srv_helpers import FamilySetup, assert_same_output

from sglang_mm_core import CompactTensor, Geometry, MmInput, MmItem, MmOutput, Tensor
from sglang_mm_core.plugin import MRope, Rope1D
from sglang_mm_core.server.codec import (
    CodecError,
    _array_json_bytes,
    _compact_json_bytes,
    decode_json,
    decode_safetensors,
    encode_json,
    encode_safetensors,
    json_size_floor,
)


def _body(out: MmOutput) -> bytes:
    return b"".join(bytes(c) for c in encode_safetensors(out))


def _synthetic(rid: str | None) -> MmOutput:
    """Every dtype tag, including bfloat16 bits, uint8 and an empty aux tensor."""
    rng = np.random.default_rng(7)
    bf16 = rng.integers(0, 2**16, size=(6, 4), dtype=np.uint16)
    items = [
        MmItem(
            Tensor(bf16, "bfloat16"),
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
            Geometry(8, 8, (1, 3)),
            3,
        ),
    ]
    ids = np.arange(14, dtype=np.int64) * 1_000_000_007
    return MmOutput(ids, items, [(1, 6), (9, 11)], Rope1D(14), "toy", "f" * 64, rid=rid)


@pytest.mark.parametrize("rid", [None, "r-1", "ünïcode rid ✓"])
def test_synthetic_round_trip(rid: str | None) -> None:
    out = _synthetic(rid)
    assert_same_output(decode_safetensors(_body(out)), out)
    assert_same_output(decode_json(encode_json(out)), out)


def test_bfloat16_is_tagged_bf16_and_float32_stays_exact() -> None:
    out = _synthetic("x")
    body = _body(out)
    (n,) = struct.unpack("<Q", body[:8])
    header = json.loads(body[8 : 8 + n])
    assert header["items.0.feature"]["dtype"] == "BF16"
    assert header["items.1.feature"]["dtype"] == "F32"
    back = decode_safetensors(body)
    assert back.items[0].feature.dtype == "bfloat16"
    assert back.items[0].feature.array.dtype == np.uint16


def test_real_outputs_round_trip(fam: FamilySetup, images: dict[str, bytes]) -> None:
    for imgs in ([], [images["jpeg_64x48"]], [images["png_56x56"], images["webp_100x60"]]):
        out = fam.pipeline.process(fam.request(imgs, rid="abc"))
        assert_same_output(decode_safetensors(_body(out)), out)
        assert_same_output(decode_json(encode_json(out)), out)


def test_body_is_a_valid_aligned_safetensors_file(
    fam: FamilySetup, images: dict[str, bytes]
) -> None:
    out = fam.pipeline.process(fam.request([images["jpeg_120x90"]]))
    chunks = encode_safetensors(out)
    body = b"".join(bytes(c) for c in chunks)
    (n,) = struct.unpack("<Q", body[:8])
    assert (8 + n) % 8 == 0
    header = json.loads(body[8 : 8 + n])
    meta = header.pop("__metadata__")
    assert {"family", "spec_fingerprint", "offsets", "hashes"} <= set(meta)
    for info in header.values():
        width = {"I64": 8, "F32": 4, "I32": 4, "U16": 2, "BF16": 2, "U8": 1}[info["dtype"]]
        assert info["data_offsets"][0] % width == 0
    # The safetensors library reads it, with the same values.
    loaded = safetensors.numpy.load(body)
    np.testing.assert_array_equal(loaded["input_ids"], out.input_ids)
    np.testing.assert_array_equal(loaded["items.0.feature"], out.items[0].feature.array)
    assert safetensors.deserialize(body)  # the library's own header validation
    # The tensors after the header are views of the arrays, not copies.
    assert any(isinstance(c, memoryview) and c.obj is out.items[0].feature.array for c in chunks)


def test_decoded_arrays_are_views_of_the_body(fam: FamilySetup, images: dict[str, bytes]) -> None:
    out = fam.pipeline.process(fam.request([images["jpeg_64x48"]]))
    body = _body(out)
    back = decode_safetensors(body)
    assert not back.items[0].feature.array.flags.owndata
    assert np.shares_memory(back.input_ids, np.frombuffer(body, dtype=np.uint8))


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x05\x00\x00\x00\x00\x00\x00\x00{}",
        struct.pack("<Q", 2) + b"[]",
        struct.pack("<Q", 2) + b"{}",
        struct.pack("<Q", 4) + b"nope",
    ],
)
def test_malformed_safetensors_bodies(body: bytes) -> None:
    with pytest.raises(CodecError):
        decode_safetensors(body)


def test_bad_byte_range_is_refused() -> None:
    header = json.dumps(
        {"input_ids": {"dtype": "I64", "shape": [4], "data_offsets": [0, 16]}}
    ).encode()
    with pytest.raises(CodecError, match="bad byte range"):
        decode_safetensors(struct.pack("<Q", len(header)) + header + b"\0" * 16)


def test_malformed_json_bodies() -> None:
    with pytest.raises(CodecError):
        decode_json(b'{"input_ids": [1]}')
    with pytest.raises(ValueError):
        decode_json(b"not json")


def test_mrope_positions_survive(fam: FamilySetup, images: dict[str, bytes]) -> None:
    out = fam.pipeline.process(fam.request([images["jpeg_64x48"]]))
    back = decode_safetensors(_body(out))
    assert type(back.positions) is type(out.positions)
    if isinstance(out.positions, MRope):
        assert back.positions == out.positions


# -- the JSON answer's size, known before encoding ---------------------------------------------


def _text(arr: np.ndarray) -> int:
    return len(json.dumps(arr.tolist(), separators=(",", ":")))


def _compact(dtype: str, pad_rules: tuple[tuple[int, int, int], ...] = ()) -> CompactTensor:
    """Codes [2 frames-once, 3 channels, 5, 6] with tables whose texts differ in length."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 256, size=(1, 3, 5, 6), dtype=np.uint8)
    if dtype == "float32":
        luts = (rng.standard_normal((3, 256)) * 10.0 ** rng.integers(-3, 3, (3, 256))).astype(
            np.float32
        )
        luts[0, :4] = [0.0, -0.0, 1.0, 0.5]  # the shortest texts
        pad = np.array([0.0, -1.5, 123.25], dtype=np.float32)
    else:
        luts = rng.integers(0, 2**16, size=(3, 256), dtype=np.uint16)
        pad = np.array([0, 7, 65535], dtype=np.uint16)
    return CompactTensor(
        codes,
        luts,
        dtype,  # type: ignore[arg-type]
        (2, 3, 5, 6),
        channel_axis=1,
        repeat_axis=0,
        repeats=2,
        pad=pad if pad_rules else None,
        pad_rules=pad_rules,
    )


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("pad_rules", [(), ((2, 3, 27),)], ids=["no-pad", "pad"])
def test_a_compact_features_json_size_is_exact(
    dtype: str, pad_rules: tuple[tuple[int, int, int], ...]
) -> None:
    f = _compact(dtype, pad_rules)
    assert _compact_json_bytes(f) == _text(f.expand().array)


@pytest.mark.parametrize(
    "arr",
    [
        np.array(5, dtype=np.int64),
        np.zeros((0, 3), dtype=np.int32),
        np.array([[0, -1, 9, 10, -10], [99, 100, -(2**62), 2**62, 7]], dtype=np.int64),
        np.arange(2**16, dtype=np.uint16).reshape(4, 4, 4096),
    ],
    ids=["scalar", "empty", "signs-and-digits", "uint16"],
)
def test_an_integer_arrays_json_size_is_exact(arr: np.ndarray) -> None:
    assert _array_json_bytes(arr) == _text(arr)


def test_the_floor_is_exact_for_compact_answers_and_a_bound_for_full_ones(
    fam: FamilySetup, images: dict[str, bytes]
) -> None:
    pipe = fam.pipeline
    req = MmInput(fam.prompt(2), [images["jpeg_200x150"], images["png_56x56"]])
    full = pipe.process(req)
    arrays = sum(
        _text(it.feature.array) + sum(_text(t.array) for t in it.aux.values()) for it in full.items
    ) + _text(full.input_ids)
    if isinstance(full.positions, MRope):
        arrays += _text(full.positions.positions)
    assert json_size_floor(full) <= arrays < len(encode_json(full))
    if pipe.family.offers_compact:
        assert json_size_floor(pipe.process(req, compact=True)) == arrays
