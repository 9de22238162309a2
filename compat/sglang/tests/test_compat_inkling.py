"""`compat.sglang.inkling` against the plugin's API (the same bits through both) and against
the extension: equal on lossless inputs; where the extension departs from Pillow 13 (its
JPEG decoder, its Pillow 12 resize pass order) ours equals the numpy + Pillow reference."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
import sglang_mm_inkling as plugin
from compat_helpers import encode, lossless, photo, pillow_rgb
from inkling_reference import decode_patchify as reference
from numpy.testing import assert_array_equal
from sglang_mm_sglang import inkling

from sglang_mm_core.common import content_hash
from sglang_mm_core.errors import KernelArgumentError

# (patch_size, frac, cap): none, SGLang's default (2.0, 2048), down- and upscales, and caps
# beside a fraction <= 1, which the extension accepts and which cannot change anything.
PARAMS = [
    (40, None, None),
    (40, 2.0, 2048),
    (16, 0.5, None),
    (14, 1.5, 100),
    (32, 1.0, 2048),
    (20, 0.7, 64),
    (40, None, 2048),
]
IMAGES = {**lossless(photo(61, 97, 1)), "png_tall": lossless(photo(150, 41, 2))["png"]}


def _plugin_cap(frac: float | None, cap: int | None) -> int | None:
    return cap if frac is not None and frac > 1 else None


def _same(a: tuple, b: tuple) -> None:  # type: ignore[type-arg]
    assert len(a) == len(b) and a[:2] == b[:2]
    assert a[2].dtype == b[2].dtype == np.uint16 and a[2].ndim == 1
    assert_array_equal(a[2], b[2])
    assert a[3:] == b[3:]


def _order_sensitive(h: int, w: int, frac: float | None, cap: int | None) -> bool:
    """Pillow 13 runs the vertical pass first when the image shrinks mostly in height."""
    from inkling_reference import scaled_size

    sw, sh = scaled_size(w, h, frac, cap)
    return (h - sh) > 0 and (h - sh) > 2 * (w - sw)


@pytest.mark.parametrize("name", sorted(IMAGES))
@pytest.mark.parametrize(("ps", "frac", "cap"), PARAMS)
def test_decode_patchify_equals_theirs_plugin_and_reference(
    ext: ModuleType, name: str, ps: int, frac: float | None, cap: int | None
) -> None:
    data = IMAGES[name]
    got = inkling.decode_patchify(data, ps, frac, cap)
    _same(got, plugin.decode_patchify(data, ps, frac, _plugin_cap(frac, cap), threads=1))
    _same(got, reference(data, ps, frac, _plugin_cap(frac, cap)))
    h, w, _ = pillow_rgb(data).shape
    theirs = ext.inkling.decode_patchify(data, ps, frac, cap)
    if _order_sensitive(h, w, frac, cap):
        assert not np.array_equal(theirs[2], got[2])  # theirs: Pillow 12's pass order
    else:
        _same(got, theirs)


def test_jpeg_equals_the_pillow_reference_where_theirs_does_not(ext: ModuleType) -> None:
    data = encode(photo(90, 120, 3), "JPEG", quality=90)
    for ps, frac, cap in PARAMS[:3]:
        got = inkling.decode_patchify(data, ps, frac, cap)
        _same(got, reference(data, ps, frac, cap))
        assert not np.array_equal(ext.inkling.decode_patchify(data, ps, frac, cap)[2], got[2])


def test_batches_equal_theirs_and_plugin(ext: ModuleType) -> None:
    datas = [IMAGES["png"], IMAGES["bmp"], IMAGES["webp"]]
    for args in [(40,), (40, 2.0, 2048), (16, 0.5, 100)]:
        ours = inkling.decode_patchify_batch(datas, *args)
        pre = inkling.preprocess_images(datas, *args)
        fixed = (*args[:2], _plugin_cap(*args[1:])) if len(args) > 1 else args
        mine = plugin.preprocess_images(datas, *fixed, threads=2)
        for k, (a, b, c, d) in enumerate(
            zip(
                ours,
                pre,
                ext.inkling.decode_patchify_batch(datas, *args),
                ext.inkling.preprocess_images(datas, *args),
                strict=True,
            )
        ):
            _same(a, c)
            _same(b, d)
            _same(b, mine[k])
            assert b[3] == content_hash(datas[k])
    assert inkling.decode_patchify_batch([], 40) == ext.inkling.decode_patchify_batch([], 40) == []


def test_patchify_and_rescale_patchify_hash_equal_theirs(ext: ModuleType) -> None:
    for data in IMAGES.values():
        arr = pillow_rgb(data)  # what SGLang's processor hands the extension
        for ps in (40, 14):
            got = inkling.patchify_rgb(arr, ps)
            assert_array_equal(got, ext.inkling.patchify_rgb(arr, ps))
            assert_array_equal(got, plugin.patchify_rgb(arr, ps, threads=1))
        for ps, frac, cap in PARAMS:
            got = inkling.rescale_patchify_hash(arr, data, ps, frac, cap)
            assert got[3] == content_hash(data)
            _same(got, plugin.rescale_patchify_hash(arr, data, ps, frac, _plugin_cap(frac, cap)))
            h, w, _ = arr.shape
            if not _order_sensitive(h, w, frac, cap):
                _same(got, ext.inkling.rescale_patchify_hash(arr, data, ps, frac, cap))


@pytest.mark.parametrize(
    "bad", [{"patch_size": 0}, {"rescale_frac": -1.0}, {"rescale_frac": float("nan")}]
)
def test_bad_arguments_are_value_errors(ext: ModuleType, bad: dict[str, float]) -> None:
    """The extension refuses a zero patch size and turns a bad fraction into a 1x1 image;
    we refuse both, as `ValueError` and `KernelArgumentError`."""
    kw = {"patch_size": 40, **bad}
    with pytest.raises(KernelArgumentError) as info:
        inkling.decode_patchify(IMAGES["png"], **kw)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)
    if "patch_size" in bad:
        with pytest.raises(ValueError):
            ext.inkling.decode_patchify(IMAGES["png"], **kw)


def test_a_failing_batch_item_is_a_value_error_naming_it(ext: ModuleType) -> None:
    datas = [IMAGES["png"], b"junk"]
    with pytest.raises(ValueError, match="image 1: "):
        inkling.preprocess_images(datas, 40)
    with pytest.raises(ValueError):
        ext.inkling.preprocess_images(datas, 40)
