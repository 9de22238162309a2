"""Decode section of bench/bench_core.py: our `image_decode_rgb` vs Pillow's
`np.asarray(Image.open(BytesIO(b)).convert("RGB"))` on a 1080p photograph.

Targets (issue 2): JPEG and PNG no slower than Pillow, ratio ours / Pillow <= 1.05. The other
formats are printed for information. Run alone: .venv/bin/python bench/_decode_section.py
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image
from skimage import data as skdata

from sglang_mm_core.common import image_decode_rgb

TARGET_RATIO = 1.05


def _best_ms(fns: list[Callable[[], Any]], repeats: int) -> list[float]:
    """Best wall time of each function in ms, interleaved run by run (same machine load)."""
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return [t * 1e3 for t in best]


def _encode(image: Image.Image, fmt: str, **params: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **params)
    return buf.getvalue()


def _pillow(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def bench_decode(repeats: int | None = None) -> list[str]:
    """Print the decode table; return the targets that were missed (empty when all met)."""
    quick = "--quick" in sys.argv
    repeats = repeats or (5 if quick else 15)
    photo = Image.fromarray(skdata.coffee()).resize((1920, 1080), Image.Resampling.LANCZOS)
    cases: list[tuple[str, bytes, bool]] = [
        ("JPEG q90 4:2:0 1080p", _encode(photo, "JPEG", quality=90), True),
        ("PNG RGB 1080p", _encode(photo, "PNG"), True),
        ("JPEG q90 4:4:4 1080p", _encode(photo, "JPEG", quality=90, subsampling=0), False),
        ("JPEG progressive 1080p", _encode(photo, "JPEG", quality=90, progressive=True), False),
        ("PNG RGBA 1080p", _encode(photo.convert("RGBA"), "PNG"), False),
        ("WebP lossy 1080p", _encode(photo, "WEBP", quality=80), False),
        ("GIF 1080p", _encode(photo.convert("P"), "GIF"), False),
        ("BMP 1080p", _encode(photo, "BMP"), False),
    ]
    print(f"decode (ms, best of {repeats}; reference = Pillow open + convert('RGB') + asarray)")
    print(f"  {'case':<26} {'bytes':>9} {'Pillow':>8} {'ours':>8} {'ratio':>6}  target")
    missed = []
    for name, data, targeted in cases:
        assert np.array_equal(image_decode_rgb(data, alpha="drop"), _pillow(data)), name
        ref, ours = _best_ms(
            [lambda d=data: _pillow(d), lambda d=data: image_decode_rgb(d)], repeats
        )
        ratio = ours / ref
        verdict = ""
        if targeted:
            ok = ratio <= TARGET_RATIO
            verdict = f"<= {TARGET_RATIO} {'ok' if ok else 'MISSED'}"
            if not ok:
                missed.append(f"decode {name}: ratio {ratio:.3f} > {TARGET_RATIO}")
        print(f"  {name:<26} {len(data):>9} {ref:>8.2f} {ours:>8.2f} {ratio:>6.3f}  {verdict}")
    return missed


if __name__ == "__main__":
    sys.exit(1 if bench_decode() else 0)
