"""smart_resize, both variants: the spec's vectors, HF's own function over a sweep of sizes that
reaches every branch, the spec's SGLang variant written out independently here, ties to even,
and the refusals (ratio, zero side, the 2^53 limits) with their messages."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sglang_mm_qwen_vl import QwenVLFamily, QwenVLParams, smart_resize
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize as hf_smart

from sglang_mm_core.errors import KernelArgumentError, MmRequestError

Q2 = (28, 3136, 12845056)
Q3 = (32, 65536, 16777216)


def sglang_smart(h: int, w: int, factor: int, min_pixels: int, max_pixels: int) -> tuple:
    """The spec's "sglang" variant: max(factor, .) after rounding, none after scaling down."""
    if max(h, w) / min(h, w) > 200:
        raise ValueError("ratio")
    hb = max(factor, round(h / factor) * factor)
    wb = max(factor, round(w / factor) * factor)
    if hb * wb > max_pixels:
        beta = math.sqrt((h * w) / max_pixels)
        hb = math.floor(h / beta / factor) * factor
        wb = math.floor(w / beta / factor) * factor
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb = math.ceil(h * beta / factor) * factor
        wb = math.ceil(w * beta / factor) * factor
    return hb, wb


@pytest.mark.parametrize(
    ("wh", "bounds", "variant", "want"),
    [
        ((640, 480), Q2, "hf", (476, 644)),
        ((1920, 1080), Q2, "hf", (1092, 1932)),
        ((30, 1000), Q2, "hf", (1008, 28)),
        ((700, 70), Q2, "hf", (56, 700)),
        ((4000, 3000), Q2, "hf", (2996, 4004)),
        ((10, 1000), Q2, "hf", (560, 28)),
        ((10, 1000), Q2, "sglang", (1008, 28)),
        ((20, 20), Q2, "hf", (56, 56)),
        ((640, 480), Q3, "hf", (480, 640)),
        ((1920, 1080), Q3, "hf", (1088, 1920)),
        ((30, 1000), Q3, "hf", (1504, 64)),
    ],
)
def test_spec_vectors(wh, bounds, variant, want):
    w, h = wh
    assert smart_resize(h, w, *bounds, variant) == want


def _sweep_sizes() -> list[tuple[int, int]]:
    """Ties at factor/2 (14, 42, 70 ... for 28; 16, 48 ... for 32), sides below factor/2,
    exact multiples, primes, up- and downscales, and aspect ratios up to exactly 200."""
    sides = sorted(
        {1, 2, 3, 13, 14, 15, 16, 17, 27, 28, 29, 31, 32, 33, 41, 42, 43, 47, 48, 49, 69, 70, 71}
        | {80, 98, 112, 126, 200, 211, 224, 400, 479, 480, 481, 1000, 1080, 1920, 2800, 5000}
    )
    pairs = [(h, w) for h in sides for w in sides if max(h, w) / min(h, w) <= 200]
    pairs += [(1, 200), (200, 1), (7, 1400), (1400, 7), (65, 13000), (13000, 65)]
    rng = np.random.default_rng(7)
    pairs += [tuple(int(x) for x in rng.integers(1, 8000, size=2)) for _ in range(400)]
    return [(h, w) for h, w in pairs if max(h, w) / min(h, w) <= 200]


@pytest.mark.parametrize("bounds", [Q2, Q3, (28, 28 * 28 * 4, 28 * 28 * 16), (32, 1, 10**9)])
def test_hf_variant_matches_transformers(bounds):
    factor, lo, hi = bounds
    branches = set()
    for h, w in _sweep_sizes():
        want = hf_smart(h, w, factor=factor, min_pixels=lo, max_pixels=hi)
        got = smart_resize(h, w, factor, lo, hi, "hf")
        assert got == want, (h, w, bounds)
        hb, wb = round(h / factor) * factor, round(w / factor) * factor
        branches.add("max" if hb * wb > hi else "min" if hb * wb < lo else "keep")
    if bounds != (32, 1, 10**9):
        assert branches == {"max", "min", "keep"}, branches


@pytest.mark.parametrize("bounds", [Q2, Q3, (28, 28 * 28 * 4, 28 * 28 * 16)])
def test_sglang_variant_matches_spec(bounds):
    for h, w in _sweep_sizes():
        want = sglang_smart(h, w, *bounds)
        if 0 in want:
            with pytest.raises(KernelArgumentError, match="empty"):
                smart_resize(h, w, *bounds, "sglang")
            continue
        assert smart_resize(h, w, *bounds, "sglang") == want, (h, w)


def test_ratio_200_accepted_201_refused():
    for h, w in [(1, 200), (200, 1), (5, 1000), (1000, 5)]:
        assert smart_resize(h, w, *Q2) == hf_smart(h, w, 28, 3136, 12845056)
    for h, w in [(1, 201), (201, 1), (5, 1001), (3, 700)]:
        with pytest.raises(ValueError):
            hf_smart(h, w, 28, 3136, 12845056)
        with pytest.raises(KernelArgumentError, match=rf"{w}x{h}.*aspect ratio"):
            smart_resize(h, w, *Q2)


def test_ties_round_to_even():
    """Python's ``round``, like the references': 1.5 and 2.5 both give 2, 3.5 and 4.5 both 4
    (rounding half up would give 84 and 140 here)."""
    wide = (28, 1, 10**9)
    assert smart_resize(70, 42, *wide) == (56, 56)
    assert smart_resize(98, 126, *wide) == (112, 112)
    assert smart_resize(14, 42, *wide, "sglang") == (28, 56)  # 0.5 -> 0, then max(factor, .)


def test_refusals_name_the_size_in_the_reference_kernel_words():
    assert smart_resize(10, 2000, *Q2) == hf_smart(10, 2000, *Q2)
    with pytest.raises(KernelArgumentError) as info:
        smart_resize(10, 2010, *Q2)
    assert str(info.value) == (
        "image of 2010x10 pixels has aspect ratio 201, over the limit of 200"
    )
    with pytest.raises(KernelArgumentError, match=r"aspect ratio 200\.5, over"):
        smart_resize(2, 401, *Q2)
    with pytest.raises(KernelArgumentError) as info:
        smart_resize(0, 5, *Q2)
    assert str(info.value) == "image of 5x0 pixels has a zero side"
    with pytest.raises(KernelArgumentError, match=r"positive factor \(0\), min_pixels"):
        smart_resize(5, 5, 0, 1, 1)
    with pytest.raises(KernelArgumentError, match="unknown smart_resize variant"):
        smart_resize(5, 5, *Q2, "vllm")  # type: ignore[arg-type]
    with pytest.raises(KernelArgumentError, match="non-negative"):
        smart_resize(-1, 5, *Q2)


def test_sizes_and_bounds_stop_at_2_53():
    """Pixel counts are doubles in the references: exact up to 2^53 pixels, refused above."""
    big = (28, 1, 2**53)
    h, w = smart_resize(2**27, 2**26, *big)  # exactly 2^53 pixels
    assert (h % 28, w % 28) == (0, 0) and h * w <= 2**53
    with pytest.raises(KernelArgumentError, match=r"67108865x134217728 pixels is too large"):
        smart_resize(2**27, 2**26 + 1, *big)
    with pytest.raises(KernelArgumentError, match=r"must be at most 2\^53"):
        smart_resize(480, 640, 28, 1, 2**53 + 1)


def test_zero_side_is_a_typed_error_naming_the_size():
    with pytest.raises(MmRequestError, match="0x480"):
        smart_resize(480, 0, *Q2)
    with pytest.raises(MmRequestError, match="640x0"):
        QwenVLFamily(QwenVLParams()).plan(640, 0)


def test_plan_counts_merged_patches():
    fam = QwenVLFamily(QwenVLParams())
    assert fam.plan(640, 480).length == (476 // 14) * (644 // 14) // 4
    q3 = QwenVLFamily(QwenVLParams(patch_size=16, min_pixels=65536, max_pixels=16777216))
    assert q3.plan(1920, 1080).length == (1088 // 16) * (1920 // 16) // 4
    sg = QwenVLFamily(QwenVLParams(smart_resize="sglang"))
    assert sg.plan(10, 1000).length == (1008 // 14) * (28 // 14) // 4


@pytest.mark.parametrize("variant", ["hf", "sglang"])
def test_public_smart_resize_is_the_plan_rule(variant):
    """`sglang_mm_qwen_vl.smart_resize` gives what the family resizes to, for both rules."""
    want_of = {
        "hf": lambda h, w: hf_smart(h, w, *Q2),
        "sglang": lambda h, w: sglang_smart(h, w, *Q2),
    }
    fam = QwenVLFamily(QwenVLParams(smart_resize=variant))
    for h, w in _sweep_sizes()[::7]:
        want = want_of[variant](h, w)
        if 0 in want:
            with pytest.raises(KernelArgumentError):
                smart_resize(h, w, *Q2, variant)
            continue
        assert smart_resize(h, w, *Q2, variant) == want, (h, w)
        geometry = fam.plan(w, h).geometry
        assert (geometry.height, geometry.width) == want, (h, w)
    assert smart_resize(480, 640, *Q2) == (476, 644)  # the default is HF's rule
