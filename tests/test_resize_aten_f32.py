"""`aten_f32` / `aten_f32_nofma` against goldens made by the real torchvision
(tests/fixtures/gen_aten_f32.py): the v1 `transforms.functional.resize` of a uint8 tensor,
BICUBIC with antialias, which casts to float32, runs aten's float kernel and rounds back (how
qwen-vl-utils resizes video frames). `aten_f32` is aten's AVX2 build, `aten_f32_nofma` its
portable one; the goldens hold both where they differ."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import skimage.data

from sglang_mm_core.common import resize_rgb

FIXTURES = Path(__file__).parent / "fixtures" / "aten_f32"
#: (image, out_w, out_h, AVX2 output, portable output)
Case = tuple[np.ndarray, int, int, np.ndarray, np.ndarray]


def _load() -> tuple[dict[str, object], list[Case]]:
    with np.load(FIXTURES / "resize.npz") as z:
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
            fma = z[f"output_{i}"]
            portable = z[f"output_default_{i}"] if f"output_default_{i}" in z.files else fma
            cases.append((img, ow, oh, fma, portable))
    return meta, cases


META, CASES = _load()


def test_fixture_names_its_reference() -> None:
    assert str(META["torch"]).startswith("2.") and str(META["torchvision"]).startswith("0.")
    assert "transforms.functional.resize" in str(META["call"]) and "BICUBIC" in str(META["call"])
    assert META["golden_capability"] == "AVX2"
    runs = META["capabilities_run"]
    assert isinstance(runs, list) and {"avx2 -> AVX2", "default -> DEFAULT"} <= set(runs)
    assert len(CASES) >= 30
    # The two builds must differ somewhere, or the fixture could not tell them apart.
    assert sum(not np.array_equal(c[3], c[4]) for c in CASES) >= 5


def _id(i: int) -> str:
    img, ow, oh, _, _ = CASES[i]
    return f"{img.shape[1]}x{img.shape[0]}->{ow}x{oh}"


@pytest.mark.parametrize("threads", [0, 1, 3])
@pytest.mark.parametrize("i", range(len(CASES)), ids=[_id(i) for i in range(len(CASES))])
def test_matches_torchvision(i: int, threads: int) -> None:
    img, ow, oh, fma, portable = CASES[i]
    for kernel, want in (("aten_f32", fma), ("aten_f32_nofma", portable)):
        got = resize_rgb(img, ow, oh, kernel, threads=threads)  # type: ignore[arg-type]
        assert got.shape == (oh, ow, 3) and got.dtype == np.uint8
        np.testing.assert_array_equal(got, want, err_msg=kernel)


def test_pass_order_does_not_apply() -> None:
    # torchvision always runs the horizontal pass first.
    img, ow, oh, fma, _ = next(
        c for c in CASES if c[0].shape[0] - c[2] > 2 * (c[0].shape[1] - c[1]) > 0
    )
    for order in ("pillow13", "pillow12"):
        np.testing.assert_array_equal(resize_rgb(img, ow, oh, "aten_f32", pass_order=order), fma)


def test_one_column_repeats_the_first_row() -> None:
    # aten's quirk, reproduced: a 1-pixel-wide output takes row 0's window for every row.
    tall = [c[3] for c in CASES if c[1] == 1 and c[2] > 1 and c[0].shape[0] != c[2]]
    assert len(tall) >= 3
    for fma in tall:
        assert (fma == fma[:1]).all()
