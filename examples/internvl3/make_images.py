"""Regenerate the two example photos from scikit-image's bundled sample data (public-domain /
CC0 samples shipped inside scikit-image), saved as JPEG: rocket (427x640) becomes a 2x3 grid
plus a thumbnail, chelsea (451x300) a 3x2 grid plus a thumbnail."""

from __future__ import annotations

from pathlib import Path

from PIL import Image
from skimage import data

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    for name in ("rocket", "chelsea"):
        Image.fromarray(getattr(data, name)()).save(HERE / f"{name}.jpg", quality=90)
