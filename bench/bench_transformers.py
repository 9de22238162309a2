"""The transformers drop-ins vs the stock HF processors they replace, interleaved in one
process, one thread on every side; prints medians and ratios.

For every installed family class (`sglang_mm_core.hf.processor_classes`), on a 1080p and a
12 MP JPEG (photo mosaics), default settings:
  1. given a PIL image (what callers hold today): HF's PIL class vs ours
     (target >= 5x; >= 2x against the torchvision class where torch is installed);
  2. given the file's bytes: ``Image.open`` + HF's PIL class vs ours on the bytes (target >= 8x),
     with Pillow's decode-only time beside it.
Each pair is first checked to give the same BatchFeature bit for bit.

Run: .venv/bin/python bench/bench_transformers.py [--quick]"""

from __future__ import annotations

import io
import os
import sys
import warnings

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.simplefilter("ignore")

from _images import mosaic  # noqa: E402
from _timing import interleaved  # noqa: E402
from PIL import Image  # noqa: E402

import sglang_mm_core.hf as mmhf  # noqa: E402
from sglang_mm_core.conformance.hf import assert_batch_features_equal  # noqa: E402

QUICK = "--quick" in sys.argv
SIZES = {"1080p": ((1920, 1080), 4, 2), "12MP": ((4032, 3024), 4, 3)}


def stock_class(cls: type) -> type:
    """The HF PIL class ours subclasses."""
    return next(b for b in cls.__mro__[1:] if b.__module__.startswith("transformers.models."))


def decoded(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img


def main() -> None:
    repeat = 3 if QUICK else 7
    print(f"one thread each side, medians of {repeat} interleaved runs (ms)")
    header = (
        f"{'class':34} {'size':6} {'HF pil':>8} {'ours':>8} {'ratio':>6} | "
        f"{'HF bytes':>8} {'ours':>8} {'ratio':>6} {'decode':>7} {'ours/dec':>8}"
    )
    print(header)
    for cls in mmhf.processor_classes():
        hf = stock_class(cls)()
        ours = cls(resample="pil")
        ours.threads = 1
        for label, (size, cols, rows) in SIZES.items():
            data = mosaic(size, cols, rows)
            pil = decoded(data).convert("RGB")
            assert_batch_features_equal(ours(pil), hf(pil))
            assert_batch_features_equal(ours(data), hf(decoded(data)))
            t = interleaved(
                {
                    "hf_pil": lambda: hf(pil),
                    "ours_pil": lambda: ours(pil),
                    "hf_bytes": lambda: hf(decoded(data)),
                    "ours_bytes": lambda: ours(data),
                    "decode": lambda: decoded(data),
                },
                repeat,
            )
            print(
                f"{cls.__name__:34} {label:6} {t['hf_pil']:8.1f} {t['ours_pil']:8.1f} "
                f"{t['hf_pil'] / t['ours_pil']:5.1f}x | {t['hf_bytes']:8.1f} "
                f"{t['ours_bytes']:8.1f} {t['hf_bytes'] / t['ours_bytes']:5.1f}x "
                f"{t['decode']:7.1f} {t['ours_bytes'] / t['decode']:7.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
