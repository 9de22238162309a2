"""``pixel_values`` and ``image_sizes`` bit for bit against HF's ``PixtralImageProcessorPil``
(the installed transformers), for Pixtral-12B's and Mistral 3's params: the photo corpus and the
family's own edge cases (small images, sides off the patch grid, 1xN and Nx1, the exact
``longest_edge`` boundary), each image at its own size."""

from __future__ import annotations

import numpy as np
import pytest
from _pixtral_refs import MODELS, PHOTOS, as_bits, gradient, hf_pil, hf_pil_processor, noise, photo
from PIL import Image
from sglang_mm_pixtral import PixtralFamily, PixtralParams, target_size

from sglang_mm_core.conformance import process_item_and_compact
from sglang_mm_core.plugin import KernelArgumentError


def _family(model: str, **extra: object) -> PixtralFamily:
    return PixtralFamily(PixtralParams(**MODELS[model][0], **extra))


def _check(fam: PixtralFamily, processor: object, images: list[Image.Image]) -> None:
    refs, sizes = hf_pil(processor, images)
    for k, im in enumerate(images):
        item = process_item_and_compact(fam, np.asarray(im))
        assert item.feature.dtype == "float32"
        assert item.feature.shape == refs[k].shape, (im.size, item.feature.shape, refs[k].shape)
        np.testing.assert_array_equal(as_bits(item.feature.array), as_bits(refs[k]))
        np.testing.assert_array_equal(item.aux["image_sizes"].array, sizes[k])
        assert item.aux["image_sizes"].dtype == "int64"
        assert (item.geometry.height, item.geometry.width) == tuple(sizes[k])


@pytest.mark.parametrize("model", sorted(MODELS))
def test_photos(model: str) -> None:
    _check(_family(model), hf_pil_processor(MODELS[model][1]), [photo(n) for n in PHOTOS])


def _edge_sizes(longest: int, factor: int) -> list[tuple[int, int]]:
    """(width, height): tiny, off-grid, 1xN / Nx1, and longest_edge -1 / exact / +1."""
    return [
        (1, 1),
        (5, 3),
        (factor - 1, factor + 1),
        (factor * 3 + 1, factor * 2 - 1),
        (1, 97),
        (233, 1),
        (1, longest),
        (longest, 1),
        (longest - 1, longest - 1),
        (longest, longest),
        (longest + 1, longest),
        (longest, longest // 3),
        (longest + 1, (longest + 1) // 3),
        (longest * 2, longest * 2 - 1),
        (3 * longest, 7),
    ]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_edge_sizes(model: str) -> None:
    fam = _family(model)
    sizes = _edge_sizes(fam.params.longest_edge, fam.params.factor)
    images = [noise(w, h, seed=i) if i % 2 else gradient(w, h) for i, (w, h) in enumerate(sizes)]
    # One image per call: HF pads a batch to its largest, and a batch of one needs no crop.
    proc = hf_pil_processor(MODELS[model][1])
    for im in images:
        _check(fam, proc, [im])


@pytest.mark.parametrize("model", sorted(MODELS))
def test_several_sizes_in_one_batch(model: str) -> None:
    """HF pads a batch to its largest image; each of ours is its own size, equal to HF's
    unpadded region, and HF's padding is exactly zero beyond it."""
    fam = _family(model)
    images = [photo("chelsea.png"), noise(300, 700, seed=3), photo("camera.png"), gradient(61, 9)]
    with_padding = np.asarray(hf_pil_processor(MODELS[model][1])(images=images)["pixel_values"])
    _check(fam, hf_pil_processor(MODELS[model][1]), images)
    for k, im in enumerate(images):
        h, w = fam.target_size(im.height, im.width)
        assert not with_padding[k][:, h:, :].any() and not with_padding[k][:, :, w:].any()


def test_no_upscale_beyond_the_patch_grid() -> None:
    """An image inside longest_edge keeps its size, rounded up to whole tokens (both
    references round up; neither enlarges it further)."""
    fam = _family("pixtral_12b")
    assert fam.target_size(480, 640) == (480, 640)
    assert fam.target_size(17, 33) == (32, 48)
    m3 = _family("mistral3")
    assert m3.target_size(480, 640) == (504, 644)
    assert m3.target_size(1540, 1540) == (1540, 1540)


def test_mean_std_override() -> None:
    fam = _family("pixtral_12b", image_mean=(0.5, 0.25, 0.0), image_std=(0.5, 2.0, 1.0))
    proc = hf_pil_processor({**MODELS["pixtral_12b"][1], "image_mean": [0.5, 0.25, 0.0],
                             "image_std": [0.5, 2.0, 1.0]})  # fmt: skip
    _check(fam, proc, [photo("coffee.png"), noise(77, 45)])


def test_target_size_matches_hf_rule() -> None:
    """Our integer rule against HF's own function over many sizes and both factors."""
    from transformers.models.pixtral.image_processing_pil_pixtral import (
        get_resize_output_image_size,
    )

    rng = np.random.default_rng(5)
    sides = np.concatenate([np.arange(1, 60), rng.integers(1, 9000, 400)])
    for longest, factor in ((1024, 16), (1540, 28), (1024, 28), (512, 14)):
        for h, w in zip(sides, rng.permutation(sides), strict=True):
            ref = get_resize_output_image_size(
                np.zeros((3, int(h), int(w)), dtype=np.uint8),
                size=(longest, longest),
                patch_size=(factor, factor),
                input_data_format="channels_first",
            )
            assert target_size(int(h), int(w), longest, factor) == tuple(ref), (h, w)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_sides_that_floor_to_zero_are_refused_as_hf_is(model: str) -> None:
    """Above longest_edge:1 the short side floors to 0 pixels; HF's resize then raises, and the
    family refuses the image with a typed error before any pixel work."""
    fam = _family(model)
    n = 2 * fam.params.longest_edge + 1
    for w, h in ((n, 1), (1, n)):
        with pytest.raises(KernelArgumentError, match="shrinks to"):
            fam.process_item(np.zeros((h, w, 3), dtype=np.uint8))
        with pytest.raises(KernelArgumentError):
            fam.plan(w, h)
        with pytest.raises(ValueError):
            hf_pil_processor(MODELS[model][1])(images=[noise(w, h)])
