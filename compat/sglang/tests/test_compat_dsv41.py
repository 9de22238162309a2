"""`compat.sglang.dsv41.resize_patchify` against the extension's and against the reference:
given what SGLang's ``prepare_image`` plans, ours equals the extension bit for bit when it
resizes in the extension's Pillow 12 pass order (the plugin's ``pil_pass_order="pillow12"``),
and the drop-in (Pillow 13's order) equals the reference ``patchify_image`` on Pillow 13;
the two orders differ where an image shrinks mostly in height. Bad geometry is refused by
both, as a `ValueError`."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
import sglang_mm_deepseek_v41 as plugin
from _dsv41_corpus import CASES, case_args, make_image
from _dsv41_refs import args, patchify_numpy, reference
from numpy.testing import assert_array_equal
from PIL import Image
from sglang_mm_sglang import dsv41

from sglang_mm_core.errors import KernelArgumentError


def _call(image: Image.Image, flat: dict) -> tuple:  # type: ignore[type-arg]
    pixels, plan, _, _ = reference().prepare_image(image, args(**flat))
    return pixels, (
        (plan["height"], plan["width"]),
        (plan["resize_h"], plan["resize_w"]),
        (plan["top"], plan["left"]),
        plan["patch_size"],
    )


# The stretch cases go through the same call (resize size = output size, no padding).
ARRAY_CASES = [c for c in CASES if "nothing-pasted" not in c[0]]


@pytest.mark.parametrize(
    ("cid", "source", "overrides"), ARRAY_CASES, ids=[c[0] for c in ARRAY_CASES]
)
def test_same_bits_as_the_extension_and_the_reference(
    ext: ModuleType,
    cid: str,
    source: dict,
    overrides: dict,  # type: ignore[type-arg]
) -> None:
    image = make_image(source)
    flat = case_args(overrides)
    pixels, call = _call(image, flat)
    theirs = ext.dsv41.resize_patchify(pixels, *call)
    pillow12 = plugin.resize_patchify(pixels, *call, pil_pass_order="pillow12", threads=2)
    assert theirs.dtype == pillow12.dtype == np.uint16 and theirs.shape == pillow12.shape
    assert_array_equal(pillow12, theirs)
    ours = dsv41.resize_patchify(pixels, *call)
    bits, *_ = patchify_numpy(image, args(**flat))
    assert_array_equal(ours, bits.reshape(-1))


def test_pass_orders_differ_on_an_image_that_shrinks_in_height(ext: ModuleType) -> None:
    image = make_image({"noise": [800, 5000, 9]})
    pixels, call = _call(image, case_args({}))
    theirs = ext.dsv41.resize_patchify(pixels, *call)
    ours = dsv41.resize_patchify(pixels, *call)
    share = float(np.mean(theirs != ours))
    assert share > 0.05, share
    bits, *_ = patchify_numpy(image, args(**case_args({})))
    assert_array_equal(ours, bits.reshape(-1))


BAD = [
    ((42, 56), (50, 56), (0, 0), 14),  # the image taller than the canvas
    ((42, 56), (33, 56), (10, 0), 14),  # pasted past its bottom
    ((42, 57), (33, 57), (4, 0), 14),  # the canvas off the patch grid
    ((0, 0), (0, 0), (0, 0), 14),  # no canvas
    ((42, 56), (33, 56), (4, 0), 0),  # no patch
    ((42, 56), (33, 56), (-1, 0), 14),  # a negative offset
]


@pytest.mark.parametrize("call", BAD)
def test_bad_geometry_is_refused_by_both(ext: ModuleType, call: tuple) -> None:  # type: ignore[type-arg]
    arr = np.random.default_rng(0).integers(0, 256, (30, 50, 3), dtype=np.uint8)
    with pytest.raises((ValueError, OverflowError)):
        ext.dsv41.resize_patchify(arr, *call)
    with pytest.raises(KernelArgumentError):
        dsv41.resize_patchify(arr, *call)


def test_an_image_that_rounds_to_nothing_leaves_the_canvas_grey(ext: ModuleType) -> None:
    """``ImageOps.pad`` of a 1x50000 image: ``contain`` rounds its width to 0 and pastes
    nothing. ``prepare_image`` plans a resize width of 0, which the extension refuses (SGLang
    would fail where its PIL path succeeds); ours returns the grey canvas, as the PIL path."""
    image = make_image({"noise": [1, 50000, 10]})
    pixels, call = _call(image, case_args({}))
    assert call[1][1] == 0
    with pytest.raises(ValueError):
        ext.dsv41.resize_patchify(pixels, *call)
    bits, *_ = patchify_numpy(image, args(**case_args({})))
    assert_array_equal(dsv41.resize_patchify(pixels, *call), bits.reshape(-1))
    assert len(set(bits.reshape(-1).tolist())) == 1
