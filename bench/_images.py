"""Benchmark inputs shared by the family benches: real photographs (scikit-image's bundled
samples, nothing downloaded) and JPEG mosaics of them with photo-like detail everywhere."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageOps
from skimage import data as skdata


def photos() -> list[np.ndarray]:
    gray = skdata.camera()
    return [
        skdata.astronaut(),
        skdata.coffee(),
        skdata.chelsea(),
        skdata.rocket(),
        skdata.stereo_motorcycle()[0],
        skdata.hubble_deep_field(),
        skdata.retina(),
        np.stack([gray] * 3, axis=-1),
    ]


def jpeg(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def mosaic(size: tuple[int, int], cols: int, rows: int, first: int = 0) -> bytes:
    """A JPEG of ``cols x rows`` photo tiles, starting at photo ``first``."""
    pics = photos()
    tw, th = size[0] // cols, size[1] // rows
    canvas = Image.new("RGB", size)
    for k in range(cols * rows):
        tile = Image.fromarray(pics[(first + k) % len(pics)]).resize(
            (tw, th), Image.Resampling.LANCZOS
        )
        canvas.paste(tile, ((k % cols) * tw, (k // cols) * th))
    return jpeg(canvas)


def hf_load(data: bytes) -> Image.Image:
    """What HF's ``load_image`` does with bytes: Pillow decode, EXIF transpose, RGB."""
    im: Image.Image = Image.open(io.BytesIO(data))
    return ImageOps.exif_transpose(im).convert("RGB")
