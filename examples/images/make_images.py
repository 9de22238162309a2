"""Regenerate the bundled demo images from scikit-image's sample data (public-domain / CC0
samples shipped inside scikit-image), one per container format the core decodes: a JPEG, a
lossy WebP, an RGB PNG and an RGBA PNG (to show the alpha handling)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image
from skimage import data

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    Image.fromarray(data.astronaut()).save(HERE / "astronaut.jpg", quality=88)
    Image.fromarray(data.coffee()).save(HERE / "coffee.webp", quality=85)
    Image.fromarray(data.chelsea()).save(HERE / "chelsea.png", optimize=True)
    logo = Image.fromarray(data.logo()).resize((250, 250), Image.Resampling.LANCZOS)
    logo.save(HERE / "logo_rgba.png", optimize=True)
