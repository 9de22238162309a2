"""`content_hash` is the first 8 bytes of BLAKE3, big-endian, exactly as the Python `blake3`
package computes them, whatever the input size (BLAKE3 switches code paths at 1 KiB chunks and
again where it goes wide) and whatever bytes-like object carries it."""

from __future__ import annotations

import numpy as np
import pytest
from blake3 import blake3

from sglang_mm_core.common import content_hash


def reference(data: bytes) -> int:
    return int.from_bytes(blake3(data).digest()[:8], "big")


SIZES = [0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 4097, 65_536, 65_537, 1 << 20, 3 * (1 << 20) + 7]


@pytest.mark.parametrize("size", SIZES)
def test_matches_python_blake3(size: int) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    got = content_hash(data)
    assert got == reference(data)
    assert 0 <= got < 1 << 64


def test_known_vectors() -> None:
    # BLAKE3("") and BLAKE3("abc") from the reference implementation's test vectors.
    assert content_hash(b"") == 0xAF1349B9F5F9A1A6
    assert content_hash(b"abc") == 0x6437B3AC38465133


def test_bytes_like_forms_agree() -> None:
    data = bytes(range(256)) * 300
    want = reference(data)
    assert content_hash(bytearray(data)) == want
    assert content_hash(memoryview(data)) == want
    assert content_hash(memoryview(b"xx" + data)[2:]) == want


def test_one_changed_byte_changes_the_hash() -> None:
    data = bytearray(1 << 16)
    base = content_hash(bytes(data))
    data[12_345] ^= 1
    assert content_hash(bytes(data)) != base
