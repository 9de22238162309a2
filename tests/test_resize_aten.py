"""`aten_u8` / `aten_u8_bilinear` against goldens made by the real torchvision
(tests/fixtures/gen_aten_u8.py): the uint8 antialiased bicubic and bilinear that HuggingFace's
fast image processors run on CPU (bilinear: aten's AVX2 kernel, see the generator)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import skimage.data

from sglang_mm_core.common import resize_rgb

FIXTURES = Path(__file__).parent / "fixtures" / "aten_u8"
KERNELS = {"aten_u8": "resize.npz", "aten_u8_bilinear": "resize_bilinear.npz"}
Case = tuple[np.ndarray, int, int, np.ndarray]


def _load(name: str) -> tuple[dict[str, object], list[Case]]:
    with np.load(FIXTURES / name) as z:
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


LOADED = {k: _load(f) for k, f in KERNELS.items()}
ALL_CASES = [(k, i) for k, (_, cases) in LOADED.items() for i in range(len(cases))]


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_fixture_names_its_reference(kernel: str) -> None:
    meta, cases = LOADED[kernel]
    assert str(meta["torch"]).startswith("2.") and str(meta["torchvision"]).startswith("0.")
    assert "v2.functional.resize" in str(meta["call"])
    assert ("BILINEAR" in str(meta["call"])) == kernel.endswith("bilinear")
    assert len(cases) >= 20


def _id(kernel: str, i: int) -> str:
    img, ow, oh, _ = LOADED[kernel][1][i]
    return f"{kernel}:{img.shape[1]}x{img.shape[0]}->{ow}x{oh}"


@pytest.mark.parametrize("threads", [0, 1, 2, 4])
@pytest.mark.parametrize("case", ALL_CASES, ids=[_id(*c) for c in ALL_CASES])
def test_matches_torchvision(case: tuple[str, int], threads: int) -> None:
    kernel, i = case
    img, ow, oh, want = LOADED[kernel][1][i]
    got = resize_rgb(img, ow, oh, kernel, threads=threads)  # type: ignore[arg-type]
    assert got.shape == (oh, ow, 3) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_pass_order_does_not_apply_to_aten(kernel: str) -> None:
    # torchvision always runs the horizontal pass first; pillow13's reordering must not leak in.
    img, ow, oh, want = next(
        c for c in LOADED[kernel][1] if c[0].shape[0] - c[2] > 2 * (c[0].shape[1] - c[1]) > 0
    )
    assert img.shape[0] > oh
    for order in ("pillow13", "pillow12"):
        got = resize_rgb(img, ow, oh, kernel, pass_order=order)  # type: ignore[arg-type]
        np.testing.assert_array_equal(got, want)
