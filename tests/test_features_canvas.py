"""A part on a canvas (`Part.on_canvas`, `PIL.ImageOps.pad`'s letterbox) through the public
`Features.compose`, against Pillow itself: the samples of every writer are those of
``ImageOps.pad``'s image, laid out as the writer says; bad geometry is a typed error."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageOps

from sglang_mm_core.plugin import (
    ChannelPlanes,
    ChwPatches,
    Features,
    HwcPatches,
    KernelArgumentError,
    Part,
    Table,
)

TABLE = Table((0.5,) * 3, (0.5,) * 3, arithmetic="numpy", dtype="bfloat16")


def _noise(w: int, h: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _pillow_pad(a: np.ndarray, canvas: tuple[int, int], fill: tuple[int, int, int]) -> tuple:
    """``ImageOps.pad``'s image, with the size ``contain`` gave and the paste position."""
    im = Image.fromarray(a)
    inner = ImageOps.contain(im, canvas)
    padded = np.asarray(ImageOps.pad(im, canvas, color=fill))
    w, h = inner.size
    at = (round((canvas[0] - w) * 0.5), 0) if w != canvas[0] else (0, round((canvas[1] - h) * 0.5))
    return padded, (w, h), at


CASES = [
    ((300, 200), (420, 224), 1),  # wider canvas: pasted with a left margin
    ((200, 300), (224, 420), 2),  # taller canvas: a top margin
    ((64, 64), (112, 112), 3),  # same ratio: a plain resize
    ((5000, 1), (448, 28), 4),  # the short side rounds to 0: all canvas
    ((28, 14), (28, 14), 5),  # no resize at all
]


@pytest.mark.parametrize(("size", "canvas", "seed"), CASES)
def test_every_writer_reads_pillows_letterbox(size, canvas, seed) -> None:  # type: ignore[no-untyped-def]
    a = _noise(*size, seed)
    fill = (127, 3, 250)
    padded, inner, at = _pillow_pad(a, canvas, fill)
    part = Part.on_canvas(inner, canvas, fill, at)
    assert part.extent == canvas
    w, h = canvas
    layouts = {
        ChannelPlanes(): padded.transpose(2, 0, 1),
        ChwPatches(14): padded.reshape(h // 14, 14, w // 14, 14, 3).transpose(0, 2, 4, 1, 3),
        HwcPatches(14): padded.reshape(h // 14, 14, w // 14, 14, 3).transpose(0, 2, 1, 3, 4),
    }
    for writer, want in layouts.items():
        f = Features(TABLE, writer, resample="pil_bicubic")
        codes = f.compose(a, [part], codes=True, threads=2)
        np.testing.assert_array_equal(codes.reshape(-1), want.reshape(-1))
        values = f.compose(a, [part], threads=3)
        np.testing.assert_array_equal(values.reshape(-1), _expand(want, writer))


def _expand(samples: np.ndarray, writer: object) -> np.ndarray:
    """The table's bf16 bits of each sample, channel taken from the sample's place."""
    channel_axis = {ChannelPlanes: 0, ChwPatches: 2, HwcPatches: 4}[type(writer)]
    ch = np.indices(samples.shape)[channel_axis]
    return TABLE.values[ch, samples].reshape(-1)


def test_bad_canvas_geometry_is_a_typed_error() -> None:
    a = _noise(20, 10, 0)
    f = Features(TABLE, ChannelPlanes(), resample="pil_bicubic")
    bad = [
        Part((20, 10), pad_to=(28, 28), at=(3, 3)),  # an offset needs a fill colour
        Part.on_canvas((20, 10), (28, 28), (1, 2, 3), (9, 0)),  # off the canvas
        Part.on_canvas((20, 10), (14, 14), (1, 2, 3), (0, 0)),  # larger than it
        Part((20, 10), fill=(1, 2, 3)),  # a canvas needs its size
    ]
    for part in bad:
        with pytest.raises(KernelArgumentError):
            f.compose(a, [part])


def test_a_family_kernel_feature_cannot_be_composed() -> None:
    with pytest.raises(KernelArgumentError, match="no resample"):
        Features(TABLE, ChannelPlanes()).compose(_noise(4, 4, 0), [Part((4, 4))])
