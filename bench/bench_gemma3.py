"""Gemma 3 family vs its references, interleaved in one process, one thread on both sides;
prints times and ratios.

  1. the bilinear kernel alone: `resize_rgb(..., "pil_bilinear")` vs Pillow's
     `Image.resize(BILINEAR)` for 1920x1080 -> 896x896 and 4032x3024 -> 896x896 (target >= 3x);
  2. bytes -> pixel_values end to end for a 1080p and a 12-megapixel JPEG, threads=0, vs HF
     `Gemma3ImageProcessorPil` with Pillow's decode (target >= 5x, or <= 1.5x Pillow's
     decode-only time), with Pillow's decode-only time;
  3. vs HF's torchvision backend (`Gemma3ImageProcessor`) on the CPU, when torch is importable
     (target >= 2x).

Run: .venv/bin/python bench/bench_gemma3.py [--quick]   (needs the gemma3 plugin installed,
transformers, Pillow and scikit-image; torch optional, e.g. from a separate torch venv)."""

from __future__ import annotations

import io
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image, ImageOps

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.simplefilter("ignore")

from _images import mosaic  # noqa: E402

from sglang_mm_core import MmInput, pipeline_from_spec  # noqa: E402
from sglang_mm_core.common import resize_rgb  # noqa: E402

QUICK = "--quick" in sys.argv
HF_KW: dict[str, Any] = {
    "size": {"height": 896, "width": 896},
    "resample": Image.Resampling.BILINEAR,
    "rescale_factor": 1 / 255,
    "image_mean": [0.5] * 3,
    "image_std": [0.5] * 3,
}


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Best wall time in ms of each, run by run in turn after one warm-up call each (load from
    elsewhere on the machine hits all alike; the minimum is the least disturbed run)."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: min(v) * 1e3 for k, v in times.items()}


def hf_load(data: bytes) -> Image.Image:
    """What HF's load_image does with bytes: Pillow decode, EXIF transpose, RGB."""
    im = Image.open(io.BytesIO(data))
    im = ImageOps.exif_transpose(im)
    return im.convert("RGB")


def kernel(size: tuple[int, int], repeat: int) -> None:
    data = mosaic(size, 2, 2)
    arr = np.ascontiguousarray(np.asarray(hf_load(data)))
    im = Image.fromarray(arr)
    np.testing.assert_array_equal(
        resize_rgb(arr, 896, 896, "pil_bilinear"), np.asarray(im.resize((896, 896), 2))
    )
    t = interleaved(
        {
            "pillow": lambda: im.resize((896, 896), Image.Resampling.BILINEAR),
            "ours": lambda: resize_rgb(arr, 896, 896, "pil_bilinear", threads=1),
        },
        repeat,
    )
    w, h = size
    print(
        f"bilinear {w}x{h} -> 896x896: Pillow {t['pillow']:7.2f} ms, pil_bilinear "
        f"{t['ours']:7.2f} ms -> {t['pillow'] / t['ours']:5.1f}x (target >= 3x, 1 thread)"
    )


def request(data: bytes) -> MmInput:
    return MmInput(input_ids=[2, 255999, 3], images=[data])


def end_to_end(name: str, data: bytes, repeat: int) -> None:
    from transformers import Gemma3ImageProcessorPil

    ref = Gemma3ImageProcessorPil(**HF_KW)
    with pipeline_from_spec({"family": "gemma3", "params": {"resample": "pil"}, "threads": 0}) as p:
        req = request(data)
        got = p.process(req).items[0].feature.array
        want = ref(images=[hf_load(data)], return_tensors="np")["pixel_values"]
        np.testing.assert_array_equal(got, want)  # the same work, bit for bit
        t = interleaved(
            {
                "hf": lambda: ref(images=[hf_load(data)], return_tensors="np"),
                "decode": lambda: hf_load(data).load(),
                "ours": lambda: p.process(req),
            },
            repeat,
        )
    print(
        f"{name}: HF Gemma3ImageProcessorPil + Pillow decode {t['hf']:8.1f} ms; Pillow decode "
        f"only {t['decode']:7.1f} ms; sglang-mm pil threads=0 {t['ours']:7.1f} ms -> "
        f"{t['hf'] / t['ours']:4.1f}x HF, {t['ours'] / t['decode']:4.2f}x decode-only "
        "(target >= 5x or <= 1.5x)"
    )
    torch_compare(name, data, repeat)


def torch_compare(name: str, data: bytes, repeat: int) -> None:
    try:
        import torch
        from transformers import Gemma3ImageProcessor
    except ImportError:
        print(f"{name}: torchvision backend: skipped (torch is not installed here)")
        return
    torch.set_num_threads(1)
    ref = Gemma3ImageProcessor(**HF_KW)
    spec = {"family": "gemma3", "params": {"resample": "aten_u8"}, "threads": 0}
    with pipeline_from_spec(spec) as p:
        req = request(data)
        t = interleaved(
            {
                "tv": lambda: ref(images=[hf_load(data)], return_tensors="pt"),
                "ours": lambda: p.process(req),
            },
            repeat,
        )
    print(
        f"{name}: HF torchvision backend (torch threads=1) {t['tv']:8.1f} ms; sglang-mm "
        f"aten_u8 threads=0 {t['ours']:7.1f} ms -> {t['tv'] / t['ours']:4.1f}x (target >= 2x)"
    )


def main() -> None:
    r = 3 if QUICK else 9
    kernel((1920, 1080), r)
    kernel((4032, 3024), r)
    hd = mosaic((1920, 1080), 2, 2, first=1)
    mp12 = mosaic((4032, 3024), 4, 2)
    print(f"inputs: 1080p JPEG {len(hd) / 1e3:.0f} kB, 12 MP JPEG {len(mp12) / 1e6:.1f} MB")
    end_to_end("1080p", hd, r)
    end_to_end("12MP ", mp12, 2 if QUICK else 5)


if __name__ == "__main__":
    main()
