"""Regenerate the bundled example images from scikit-image's sample data, saved as JPEG
(the photos are public-domain / CC0 samples shipped inside scikit-image)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image
from skimage import data

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    for name in ("astronaut", "coffee", "chelsea"):
        Image.fromarray(getattr(data, name)()).save(HERE / f"{name}.jpg", quality=90)
