"""InternVL family vs its references, in one process, one thread on every side, interleaved
round by round (so load from elsewhere on the machine hits every side alike), medians printed.

From JPEG bytes of a 1080p photo mosaic and a 12-megapixel one to ``pixel_values`` (9 tiles of
448 pixels for 1080p, 22 MB of float32; 13 tiles, 31 MB, for the 4:3 12 MP one), against:

  - Pillow's decode alone (``Image.open(...).convert("RGB")``): a bit-exact pipeline must
    decode every pixel, so this is its floor (target: at most 1.5x of it, or >= 5x faster
    than HF's PIL backend, whichever is easier);
  - HF's PIL backend (``GotOcr2ImageProcessorPil``, tiles on, as ``InternVLProcessor`` calls
    it) after Pillow's decode and EXIF transpose;
  - HF's torchvision backend (``GotOcr2ImageProcessor``, torch threads = 1), when torch is
    importable (target >= 2x);
  - the model card's ``load_image`` (Pillow crops, torchvision transforms), when torch is
    importable.

Run: .venv/bin/python bench/bench_internvl.py [--quick]   (needs the internvl plugin,
transformers, Pillow and scikit-image; torch optional: run it where torch is installed for the
torchvision rows)."""

from __future__ import annotations

import io
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.simplefilter("ignore")

import numpy as np  # noqa: E402
from _images import mosaic  # noqa: E402
from PIL import Image, ImageOps  # noqa: E402

from sglang_mm_core import MmInput, pipeline_from_spec  # noqa: E402

QUICK = "--quick" in sys.argv
CTX = 151667
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def hf_load(data: bytes) -> Image.Image:
    """What HF's load_image does with bytes: Pillow decode, EXIF transpose, RGB."""
    im = Image.open(io.BytesIO(data))
    im = ImageOps.exif_transpose(im)
    return im.convert("RGB")


def pillow_decode(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    return im.convert("RGB")


def sides(data: bytes) -> dict[str, Callable[[], Any]]:
    """Every contender, each returning its pixel_values (checked for equal shapes)."""
    from transformers import GotOcr2ImageProcessorPil

    kw = {"size": {"height": 448, "width": 448}, "crop_to_patches": True, "max_patches": 12}
    hf_pil = GotOcr2ImageProcessorPil(**kw, image_mean=MEAN, image_std=STD)
    req = MmInput(input_ids=[1, CTX, 2], images=[data])
    pipes = {
        r: pipeline_from_spec({"family": "internvl", "params": {"resample": r}, "threads": 0})
        for r in ("pil", "aten_u8")
    }
    card = pipeline_from_spec(
        {
            "family": "internvl",
            "params": {"resample": "pil", "tiling": "model_card"},
            "decode": {"alpha": "drop", "exif_orientation": False},
            "threads": 0,
        }
    )
    out: dict[str, Callable[[], Any]] = {
        "Pillow decode only": lambda: pillow_decode(data),
        "HF GotOcr2ImageProcessorPil": lambda: hf_pil(images=[hf_load(data)], return_tensors="np")[
            "pixel_values"
        ],
        "sglang-mm resample=pil": lambda: pipes["pil"].process(req).items[0].feature.array,
        "sglang-mm resample=aten_u8": lambda: pipes["aten_u8"].process(req).items[0].feature.array,
        "sglang-mm tiling=model_card": lambda: card.process(req).items[0].feature.array,
    }
    try:
        import torch
        from transformers import GotOcr2ImageProcessor
    except ImportError:
        return out
    torch.set_num_threads(1)
    hf_tv = GotOcr2ImageProcessor(**kw, image_mean=MEAN, image_std=STD)
    out["HF GotOcr2ImageProcessor (torchvision)"] = lambda: hf_tv(
        images=[hf_load(data)], return_tensors="pt"
    )["pixel_values"]
    sys.path.insert(
        0, os.path.join(os.path.dirname(__file__), "..", "plugins", "internvl", "tests")
    )
    from gen_goldens import card_load_image

    out["model card load_image (torchvision)"] = lambda: card_load_image(pillow_decode(data), 1, 12)
    return out


def run(name: str, data: bytes, rounds: int) -> None:
    contenders = sides(data)
    shapes = {}
    for label, fn in contenders.items():  # warm-up, and the same work on every side
        result = fn()
        if label != "Pillow decode only":
            shapes[label] = tuple(np.asarray(result).shape)
    if len(set(shapes.values())) != 1:
        raise SystemExit(f"{name}: the sides made different pixel_values shapes: {shapes}")
    times: dict[str, list[float]] = {label: [] for label in contenders}
    for _ in range(rounds):
        for label, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            times[label].append((time.perf_counter() - t0) * 1e3)
    med = {label: statistics.median(v) for label, v in times.items()}
    shape = next(iter(shapes.values()))
    print(f"\n{name}: pixel_values {list(shape)} float32, median of {rounds}, one thread")
    for label, ms in med.items():
        print(f"  {label:<40} {ms:8.1f} ms")
    for ours in ("sglang-mm resample=pil", "sglang-mm resample=aten_u8"):
        ms = med[ours]
        print(
            f"  {ours}: {med['HF GotOcr2ImageProcessorPil'] / ms:5.2f}x faster than HF PIL "
            f"(target >= 5x), {ms / med['Pillow decode only']:5.2f}x Pillow's decode "
            "(target <= 1.5x)"
        )
    tv = med.get("HF GotOcr2ImageProcessor (torchvision)")
    if tv is not None:
        print(
            f"  sglang-mm resample=aten_u8: {tv / med['sglang-mm resample=aten_u8']:5.2f}x "
            "faster than HF torchvision (target >= 2x)"
        )
    card = med.get("model card load_image (torchvision)")
    if card is not None:
        print(
            f"  sglang-mm tiling=model_card: {card / med['sglang-mm tiling=model_card']:5.2f}x "
            "faster than the model card's load_image"
        )


def main() -> None:
    hd = mosaic((1920, 1080), 2, 2, first=1)
    mp12 = mosaic((4000, 3000), 4, 2)
    print(f"inputs: 1080p JPEG {len(hd) / 1e3:.0f} kB, 12 MP JPEG {len(mp12) / 1e6:.1f} MB")
    run("1080p", hd, 5 if QUICK else 15)
    run("12MP ", mp12, 3 if QUICK else 9)


if __name__ == "__main__":
    main()
