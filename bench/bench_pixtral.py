"""Pixtral / Mistral 3 family against its references, one process, one thread on every side,
interleaved rounds, medians; from JPEG bytes (a 1080p photo mosaic and a 12-megapixel one) to
``pixel_values``:

- Pillow's decode alone (HF's ``load_image``: decode, EXIF transpose, RGB), the floor;
- HF ``PixtralImageProcessorPil`` after that decode (target: >= 5x, or <= 1.5x the decode);
- HF ``PixtralImageProcessor`` (torchvision, CPU) when torch is importable (target >= 2x);
- mistral-common's ``ImageEncoder`` (OpenCV cubic; vLLM's Mistral tokenizer mode), if installed;
- sglang-mm ``Pipeline.process`` (threads=0: decode, resize, normalize inline), both resamplers.

Run: .venv/bin/python bench/bench_pixtral.py [--quick]; for the torchvision column run it with
an interpreter that has torch and the sglang-mm wheels installed."""

from __future__ import annotations

import io
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from PIL import Image, ImageOps

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.simplefilter("ignore")

from _images import mosaic  # noqa: E402

from sglang_mm_core import MmInput, pipeline_from_spec  # noqa: E402

QUICK = "--quick" in sys.argv
ROUNDS = 3 if QUICK else 9
MODELS = {
    "pixtral-12b": ({}, {"patch_size": 16, "size": {"longest_edge": 1024}}, (16, 1024, 1)),
    "mistral3": (
        {"patch_size": 14, "spatial_merge_size": 2, "longest_edge": 1540},
        {"patch_size": 28, "size": {"longest_edge": 1540}},
        (14, 1540, 2),
    ),
}


def hf_load(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im = ImageOps.exif_transpose(im)
    return im.convert("RGB")


def contenders(model: str, data: bytes) -> dict[str, Callable[[], Any]]:
    from transformers import PixtralImageProcessorPil

    params, hf_kwargs, mc = MODELS[model]
    out: dict[str, Callable[[], Any]] = {"pillow decode": lambda: hf_load(data)}
    pil = PixtralImageProcessorPil(**hf_kwargs)
    out["HF PIL backend"] = lambda: pil(images=[hf_load(data)], return_tensors="np")
    try:
        import torch
        from transformers import PixtralImageProcessor

        torch.set_num_threads(1)
        tv = PixtralImageProcessor(**hf_kwargs)
        out["HF torchvision"] = lambda: tv(images=[hf_load(data)], return_tensors="pt")
    except ImportError:
        pass
    try:
        import cv2
        from mistral_common.protocol.instruct.messages import ImageChunk
        from mistral_common.tokens.tokenizers.image import (
            ImageConfig,
            ImageEncoder,
            SpecialImageIDs,
        )

        cv2.setNumThreads(1)
        enc = ImageEncoder(ImageConfig(*mc), SpecialImageIDs(img=10, img_break=12, img_end=13))
        out["mistral-common"] = lambda: enc(ImageChunk(image=hf_load(data)))
    except ImportError:
        pass
    for resample in ("pil", "aten_u8"):
        spec = {"family": "pixtral", "params": {**params, "resample": resample}, "threads": 0}
        pipe = pipeline_from_spec(spec)
        req = MmInput(input_ids=[1, 10, 2], images=[data])
        out[f"sglang-mm {resample}"] = lambda pipe=pipe, req=req: pipe.process(req)
    return out


def measure(fns: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Median ms per contender; each round runs every contender once, in turn."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t0) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    inputs = {"1080p": mosaic((1920, 1080), 3, 2), "12MP": mosaic((4000, 3000), 4, 3)}
    for model in MODELS:
        for label, data in inputs.items():
            med = measure(contenders(model, data))
            ours = med["sglang-mm pil"]
            print(f"\n{model}, {label} JPEG ({len(data) // 1024} KiB), one thread, median of "
                  f"{ROUNDS}:")  # fmt: skip
            for name, ms in med.items():
                ratio = ms / ours
                print(f"  {name:<18} {ms:8.1f} ms   {ratio:5.2f}x sglang-mm pil's time")
            print(
                f"  -> vs HF PIL {med['HF PIL backend'] / ours:.1f}x faster; "
                f"{ours / med['pillow decode']:.2f}x Pillow's decode-only time"
                + (
                    f"; vs HF torchvision {med['HF torchvision'] / med['sglang-mm aten_u8']:.1f}x"
                    if "HF torchvision" in med
                    else ""
                )
                + (
                    f"; vs mistral-common {med['mistral-common'] / ours:.1f}x"
                    if "mistral-common" in med
                    else ""
                )
            )


if __name__ == "__main__":
    main()
