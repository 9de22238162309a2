"""`aten_u8` against goldens made by the real torchvision (tests/fixtures/gen_aten_u8.py): the
uint8 antialiased bicubic that HuggingFace's fast image processors run on CPU."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import skimage.data

from sglang_mm_core.common import resize_rgb

FIXTURE = Path(__file__).parent / "fixtures" / "aten_u8" / "resize.npz"


def _load() -> tuple[dict[str, object], list[tuple[np.ndarray, int, int, np.ndarray]]]:
    with np.load(FIXTURE) as z:
        meta = json.loads(str(z["meta"]))
        cases = []
        for i in range(meta["cases"]):
            w, h, ow, oh = (int(v) for v in z[f"size_{i}"])
            if f"input_{i}" in z.files:
                img = z[f"input_{i}"]
            else:
                photo = getattr(skimage.data, str(z[f"source_{i}"]))()
                img = np.ascontiguousarray(photo[:h, :w, :3])
                assert hashlib.sha256(img.tobytes()).hexdigest() == str(z[f"sha256_{i}"])
            assert img.shape == (h, w, 3)
            cases.append((img, ow, oh, z[f"output_{i}"]))
    return meta, cases


META, CASES = _load()


def test_fixture_names_its_reference() -> None:
    assert str(META["torch"]).startswith("2.") and str(META["torchvision"]).startswith("0.")
    assert "v2.functional.resize" in str(META["call"])
    assert len(CASES) >= 20


@pytest.mark.parametrize("threads", [0, 1, 2, 4])
@pytest.mark.parametrize(
    "case",
    range(len(CASES)),
    ids=[f"{c[0].shape[1]}x{c[0].shape[0]}->{c[1]}x{c[2]}" for c in CASES],
)
def test_matches_torchvision(case: int, threads: int) -> None:
    img, ow, oh, want = CASES[case]
    got = resize_rgb(img, ow, oh, "aten_u8", threads=threads)
    assert got.shape == (oh, ow, 3) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def test_pass_order_does_not_apply_to_aten() -> None:
    # torchvision always runs the horizontal pass first; pillow13's reordering must not leak in.
    img, ow, oh, want = next(
        c for c in CASES if c[0].shape[0] - c[2] > 2 * (c[0].shape[1] - c[1]) > 0
    )
    assert img.shape[0] > oh
    for order in ("pillow13", "pillow12"):
        np.testing.assert_array_equal(resize_rgb(img, ow, oh, "aten_u8", pass_order=order), want)
