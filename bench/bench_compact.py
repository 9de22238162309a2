"""Compact features against full ones, in process, one thread: answer bytes (the safetensors
body) and compute time (``Pipeline.process`` medians) for a 1080p JPEG, Qwen2-VL (both
resamplers), Inkling, InternVL, Gemma 3 and Pixtral, plus Pillow's decode-only time for scale.
Targets: Qwen2 compact bytes <= 1/7 of full, Inkling <= 1/3.5 (the float32-table families
about 1/4); compact no slower than full; 1.15x Pillow decode.

Run: .venv/bin/python bench/bench_compact.py [--quick]"""

from __future__ import annotations

import io
import statistics
import sys
import time
from collections.abc import Callable

from _images import mosaic
from PIL import Image

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core._outputs import encode_safetensors

QUICK = "--quick" in sys.argv
REPEAT = 5 if QUICK else 21


def median_ms(fn: Callable[[], object]) -> float:
    fn()
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def body_bytes(out: object) -> int:
    return sum(len(c) for c in encode_safetensors(out))  # type: ignore[arg-type]


def main() -> None:
    data = mosaic((1920, 1080), 4, 3)
    decode = median_ms(lambda: Image.open(io.BytesIO(data)).convert("RGB").load())
    print(f"1080p JPEG, Pillow decode only: {decode:.1f} ms (median of {REPEAT}, one thread)")
    cases = [
        ("qwen2 aten_u8", {"family": "qwen_vl", "params": {"resample": "aten_u8"}}),
        ("qwen2 pil", {"family": "qwen_vl", "params": {"resample": "pil"}}),
        ("inkling", {"family": "inkling", "params": {}}),
        ("internvl", {"family": "internvl", "params": {}}),
        ("gemma3", {"family": "gemma3", "params": {}}),
        ("pixtral", {"family": "pixtral", "params": {}}),
    ]
    for name, doc in cases:
        with pipeline_from_spec({**doc, "threads": 0}) as pipe:
            req = MmInput(list(pipe.family.example_prompt(1)), [data])
            full, compact = pipe.process(req), pipe.process(req, compact=True)
            fb, cb = body_bytes(full), body_bytes(compact)
            tf = median_ms(lambda p=pipe, r=req: p.process(r))
            tc = median_ms(lambda p=pipe, r=req: p.process(r, compact=True))
        print(
            f"{name:14s} answer {fb / 1e6:6.2f} MB full, {cb / 1e6:5.2f} MB compact "
            f"(1/{fb / cb:.2f}); process {tf:6.1f} ms full, {tc:6.1f} ms compact "
            f"({tc / tf:.2f}x full, {tc / decode:.2f}x Pillow decode)"
        )

    cache_hit(data)
    driver_overhead()


def cache_hit(data: bytes) -> None:
    """A 1080p request served from the feature cache (no decode), compact and full."""
    doc = {"family": "qwen_vl", "threads": 0, "cache": {"max_bytes": 1 << 28}}
    with pipeline_from_spec(doc) as pipe:
        req = MmInput([1, 151652, 151655, 151653, 2], [data])
        pipe.process(req, compact=True)
        hc = median_ms(lambda: pipe.process(req, compact=True))
        hf = median_ms(lambda: pipe.process(req))
    print(f"qwen2 cache hit 1080p: {hc:.2f} ms compact, {hf:.2f} ms full (expanded on the CPU)")


def driver_overhead() -> None:
    """`process` of one 56x56 image minus its kernels: bench_driver.py, interleaved."""
    from bench_driver import main as driver_main

    driver_main()


if __name__ == "__main__":
    main()
