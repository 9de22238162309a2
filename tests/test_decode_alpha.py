"""Alpha handling: "white" is Pillow's integer `alpha_composite` onto opaque white, checked on
every (value, alpha) pair; "drop" is `convert("RGB")`."""

from __future__ import annotations

import corpus
import numpy as np
from numpy.testing import assert_array_equal
from PIL import Image

from sglang_mm_core.common import image_decode_rgb


def all_pairs_rgba() -> np.ndarray:
    """256x256 RGBA: x is the value, y the alpha; G and B run the other way so channels differ."""
    v = np.arange(256, dtype=np.uint8)
    value = np.broadcast_to(v[None, :], (256, 256))
    alpha = np.broadcast_to(v[:, None], (256, 256))
    return np.dstack([value, 255 - value, value[:, ::-1], alpha]).copy()


def test_every_value_alpha_pair_matches_alpha_composite() -> None:
    rgba = all_pairs_rgba()
    data = corpus.save(rgba, "PNG")
    white = Image.new("RGBA", (256, 256), (255, 255, 255))
    want = np.asarray(Image.alpha_composite(white, Image.fromarray(rgba)).convert("RGB"))
    assert_array_equal(image_decode_rgb(data, alpha="white"), want)
    assert_array_equal(image_decode_rgb(data, alpha="drop"), rgba[..., :3])
    # The two ends of the arithmetic: transparent is white, opaque is unchanged.
    assert (want[0] == 255).all()
    assert_array_equal(want[255], rgba[255, :, :3])


def test_every_gray_alpha_pair_matches_alpha_composite() -> None:
    la = all_pairs_rgba()[..., [0, 3]]
    data = corpus.save(Image.fromarray(la, mode="LA"), "PNG")
    assert_array_equal(image_decode_rgb(data), corpus.pillow_decode(data, "white"))
    assert_array_equal(image_decode_rgb(data, alpha="drop"), np.repeat(la[..., :1], 3, axis=2))


def test_palette_alphas_composite_per_entry() -> None:
    idx = np.arange(256, dtype=np.uint8).reshape(16, 16)
    palette = corpus.noise(256, 3, channels=1, seed=5)
    trns = bytes(range(255, -1, -1))
    data = corpus.png_raw(idx, 3, 8, palette=palette, trns=trns)
    assert_array_equal(image_decode_rgb(data), corpus.pillow_decode(data, "white"))
    assert_array_equal(image_decode_rgb(data, alpha="drop"), palette[idx])


def test_transparent_colour_entries_become_white() -> None:
    # RGB + tRNS: the spec composites it too (HuggingFace's convert_to_rgb would return an RGB
    # image untouched; the documented rule says "a transparency entry" and that is what is tested).
    pixels = np.zeros((4, 4, 3), np.uint8)
    pixels[1:3, 1:3] = (10, 20, 30)
    data = corpus.save(pixels, "PNG", transparency=(10, 20, 30))
    out = image_decode_rgb(data)
    assert (out[1:3, 1:3] == 255).all() and (out[0] == 0).all()
    assert_array_equal(out, corpus.pillow_decode(data, "white"))
    assert_array_equal(image_decode_rgb(data, alpha="drop"), pixels)


def test_gif_transparency_index() -> None:
    idx = (np.arange(64).reshape(8, 8) % 4).astype(np.uint8)
    palette = np.array([[200, 0, 0], [0, 200, 0], [0, 0, 200], [9, 9, 9]], np.uint8)
    data = corpus.gif_raw(idx, global_palette=palette, transparency=1, bits=2)
    out = image_decode_rgb(data)
    assert (out[idx == 1] == 255).all()
    assert_array_equal(out, corpus.pillow_decode(data, "white"))
    assert_array_equal(image_decode_rgb(data, alpha="drop"), palette[idx])
