"""The overlapped path (decode streamed into the resize and patching, threads >= 2) against the
numpy + Pillow reference: baseline, progressive, grayscale and CMYK JPEGs, odd sizes, every
pass order of the resize, PNG (decoded whole), and truncated or corrupt scans, for 1, 2 and 4
threads."""

from __future__ import annotations

import io

import numpy as np
import pytest
from inkling_corpus import encode, gray_jpeg, load_photo
from inkling_reference import decode_patchify as ref_decode_patchify
from numpy.testing import assert_array_equal
from PIL import Image
from sglang_mm_inkling import decode_patchify, preprocess_images

from sglang_mm_core.errors import DecodeError

THREADS = (1, 2, 4)


def _cmyk_jpeg(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).convert("CMYK").save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _corpus() -> dict[str, bytes]:
    coffee = load_photo("coffee")
    rng = np.random.default_rng(11)
    odd = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    tall = np.ascontiguousarray(np.repeat(load_photo("chelsea")[:, :90], 3, axis=0))
    return {
        "baseline 420": encode(coffee, "JPEG", quality=90),
        "baseline 444": encode(coffee, "JPEG", quality=95, subsampling=0),
        "progressive": encode(coffee, "JPEG", quality=90, progressive=True),
        "gray": gray_jpeg(),
        "cmyk": _cmyk_jpeg(coffee[:201, :303]),
        "odd 53x37": encode(odd, "JPEG", quality=80),
        "tall 90x900": encode(tall, "JPEG", quality=85),
        "png": encode(odd, "PNG"),
    }


CORPUS = _corpus()
# No rescale, the default upscale, a downscale; 0.3 on the tall image resizes vertically first.
RESCALES = [(None, None), (2.0, 2048), (0.3, None)]


@pytest.mark.parametrize("frac,cap", RESCALES)
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_thread_count_matches_the_reference(
    name: str, frac: float | None, cap: int | None
) -> None:
    data = CORPUS[name]
    ps = 16 if name.startswith("odd") else 40
    h, w, want = ref_decode_patchify(data, ps, frac, cap)
    for threads in THREADS:
        gh, gw, got = decode_patchify(data, ps, frac, cap, threads=threads)
        assert (gh, gw) == (h, w), threads
        assert_array_equal(got, want, err_msg=f"{threads} threads")
    ((gh, gw, got, _),) = preprocess_images([data], ps, frac, cap, threads=2)
    assert (gh, gw) == (h, w)
    assert_array_equal(got, want)


def _pillow_fails(data: bytes) -> bool:
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.convert("RGB")
    except Exception:
        return True
    return False


@pytest.mark.parametrize("name", ["baseline 420", "progressive", "gray"])
def test_truncated_and_corrupt_scans(name: str) -> None:
    data = CORPUS[name]
    cases = [data[:n] for n in (len(data) // 5, len(data) // 2, len(data) - 40, len(data) - 2)]
    junk = bytearray(data)
    junk[len(data) // 2 :] = b"\xff" * (len(data) - len(data) // 2)
    cases.append(bytes(junk))
    cases.append(data + b"\0" * 64)  # trailing bytes after EOI: Pillow decodes it
    for case in cases:
        if _pillow_fails(case):
            messages = set()
            for threads in THREADS:
                with pytest.raises(DecodeError) as info:
                    decode_patchify(case, 40, 2.0, 2048, threads=threads)
                messages.add(str(info.value))
            assert len(messages) == 1, messages
        else:
            h, w, want = ref_decode_patchify(case, 40, 2.0, 2048)
            for threads in THREADS:
                gh, gw, got = decode_patchify(case, 40, 2.0, 2048, threads=threads)
                assert (gh, gw) == (h, w)
                assert_array_equal(got, want)
