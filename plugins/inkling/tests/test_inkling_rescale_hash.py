"""`rescale_patchify_hash`: the kernel on an image the caller decoded, plus the content hash
of its encoded bytes. Bit-exact with the numpy + Pillow reference, and with
`preprocess_images` on the same bytes."""

from __future__ import annotations

import io

import numpy as np
import pytest
from blake3 import blake3
from inkling_reference import decode_patchify as ref_decode_patchify
from numpy.testing import assert_array_equal
from PIL import Image
from sglang_mm_inkling import preprocess_images, rescale_patchify_hash

from sglang_mm_core.errors import KernelArgumentError

RESCALES = [(None, None), (2.0, 2048), (0.5, None), (1.5, 700), (3.0, 100)]


def _rgb(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB"))


@pytest.mark.parametrize(("frac", "cap"), RESCALES)
def test_equals_reference_and_preprocess_images(
    photo_jpegs: dict[str, bytes], frac: float | None, cap: int | None
) -> None:
    for name in ("astronaut", "camera_gray"):
        data = photo_jpegs[name]
        h, w, bits, digest = rescale_patchify_hash(_rgb(data), data, 40, frac, cap, threads=1)
        rh, rw, rbits = ref_decode_patchify(data, 40, frac, cap)
        assert (h, w) == (rh, rw) and bits.dtype == np.uint16
        assert_array_equal(bits, rbits)
        assert digest == int.from_bytes(blake3(data).digest()[:8], "big")
        [(ph, pw, pbits, phash)] = preprocess_images([data], 40, frac, cap, threads=2)
        assert (ph, pw, phash) == (h, w, digest)
        assert_array_equal(pbits, bits)


def test_threads_do_not_change_the_bits(photo_jpegs: dict[str, bytes]) -> None:
    data = photo_jpegs["astronaut"]
    arr = _rgb(data)
    one = rescale_patchify_hash(arr, data, 16, 2.0, 2048, threads=1)
    for threads in (0, 2, 3):
        other = rescale_patchify_hash(arr, memoryview(data), 16, 2.0, 2048, threads=threads)
        assert other[:2] == one[:2] and other[3] == one[3]
        assert_array_equal(other[2], one[2])


def test_bad_arguments_are_typed_errors(photo_jpegs: dict[str, bytes]) -> None:
    data = photo_jpegs["astronaut"]
    arr = _rgb(data)
    with pytest.raises(KernelArgumentError, match="patch_size"):
        rescale_patchify_hash(arr, data, 0)
    with pytest.raises(KernelArgumentError, match="rescale_cap"):
        rescale_patchify_hash(arr, data, 40, 1.0, 100)
    with pytest.raises(KernelArgumentError, match=r"\[h, w, 3\]"):
        rescale_patchify_hash(np.ascontiguousarray(arr[:, :, :2]), data, 40)
    with pytest.raises(KernelArgumentError, match="expected encoded image bytes, got str"):
        rescale_patchify_hash(arr, "not bytes", 40)  # type: ignore[arg-type]
