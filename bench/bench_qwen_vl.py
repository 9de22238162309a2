"""Qwen-VL family vs its references, side by side in one process; prints times and ratios.

  1. bytes -> pixel_values end to end (decode, resize, normalize, patchify) for a 1080p and a
     12-megapixel JPEG, Qwen2-VL parameters, threads=0, vs HF `Qwen2VLImageProcessorPil` with
     Pillow's decode (target >= 5x);
  2. one request of 8 1080p JPEGs through `Pipeline.process`, threads=2 vs threads=0
     (target >= 1.7x throughput on 2 cores);
  3. vs HF's torchvision backend (`Qwen2VLImageProcessor`) on the CPU, when torch is importable
     (target >= 2x);
  4. peak memory of one 12-megapixel request over decoded + resized + output (target <= 1.5x).

Run: .venv/bin/python bench/bench_qwen_vl.py [--quick]   (needs the qwen_vl plugin installed,
transformers, Pillow and scikit-image; torch optional)."""

from __future__ import annotations

import gc
import io
import os
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

IMG, VS, VE = 151655, 151652, 151653
QUICK = "--quick" in sys.argv


def shipped() -> dict[str, int]:
    """The pixel bounds the plugin's Qwen2 defaults ship (Qwen2-VL's preprocessor_config.json).
    HF's processor classes default to a smaller ``longest_edge`` (1003520), so the references
    must be given these or they would resize to a twelfth of the pixels."""
    from sglang_mm_qwen_vl.params import QwenVLParams

    p = QwenVLParams()
    return {"min_pixels": p.min_pixels, "max_pixels": p.max_pixels}


def same_shape(name: str, ref: Any, ours: Any) -> None:
    """Refuse to compare timings of different amounts of work."""
    got, want = tuple(ours.items[0].feature.array.shape), tuple(ref["pixel_values"].shape)
    if got != want:
        raise SystemExit(f"{name}: reference made pixel_values {want}, sglang-mm {got}")


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time in ms after one warm-up call (the machine may be shared; the minimum is
    the least disturbed run)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def spec(threads: int, resample: str = "aten_u8") -> dict[str, Any]:
    return {"family": "qwen_vl", "params": {"resample": resample}, "threads": threads}


def request(images: list[bytes]) -> MmInput:
    ids = [1, 2] + [t for _ in images for t in (VS, IMG, VE, 3)]
    return MmInput(input_ids=ids, images=images)


def hf_load(data: bytes) -> Image.Image:
    """What HF's load_image does with bytes: Pillow decode, EXIF transpose, RGB."""
    im = Image.open(io.BytesIO(data))
    im = ImageOps.exif_transpose(im)
    return im.convert("RGB")


# --- memory ---------------------------------------------------------------------------------


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def peak_memory(data: bytes) -> None:
    with pipeline_from_spec(spec(0)) as pipe:
        pipe.process(request([mosaic((640, 480), 1, 1)]))  # warm up allocator and imports
        gc.collect()
        base = _status("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        out = pipe.process(request([data]))
        peak = _status("VmHWM")
    item = out.items[0]
    with Image.open(io.BytesIO(data)) as im:
        w, h = im.size
    decoded = w * h * 3
    resized = item.geometry.width * item.geometry.height * 3
    output = item.feature.array.nbytes
    budget = decoded + resized + output
    used = peak - base
    print(
        f"peak memory, one {w}x{h} JPEG (threads=0): {used / 2**20:.0f} MiB over the baseline; "
        f"decoded {decoded / 2**20:.0f} + resized {resized / 2**20:.0f} + output "
        f"{output / 2**20:.0f} = {budget / 2**20:.0f} MiB -> ratio {used / budget:.2f} "
        f"(target <= 1.5)"
    )
    del out, item


# --- speed ----------------------------------------------------------------------------------


def end_to_end(name: str, data: bytes, repeat: int) -> None:
    from transformers import Qwen2VLImageProcessorPil

    ref = Qwen2VLImageProcessorPil(**shipped())
    hf_ms = timed(lambda: ref(images=[hf_load(data)], return_tensors="np"), repeat)
    print(f"{name}: HF Qwen2VLImageProcessorPil + Pillow decode  {hf_ms:8.1f} ms")
    want = ref(images=[hf_load(data)], return_tensors="np")
    for resample in ("pil", "aten_u8"):
        with pipeline_from_spec(spec(0, resample)) as pipe:
            req = request([data])
            same_shape(name, want, pipe.process(req))
            ms = timed(lambda pipe=pipe, req=req: pipe.process(req), repeat)
        print(
            f"{name}: sglang-mm resample={resample:<8} threads=0      {ms:8.1f} ms"
            f"   -> {hf_ms / ms:5.1f}x faster (target >= 5x)"
        )
    torch_compare(name, data, repeat)


def torch_compare(name: str, data: bytes, repeat: int) -> None:
    try:
        import torch
        from transformers import Qwen2VLImageProcessor
    except ImportError:
        print(f"{name}: torchvision backend: skipped (torch is not installed here)")
        return
    ref = Qwen2VLImageProcessor(**shipped())
    for threads in (1, 2):
        torch.set_num_threads(threads)
        tv_ms = timed(lambda: ref(images=[hf_load(data)], return_tensors="pt"), repeat)
        ours = 0 if threads == 1 else 2
        with pipeline_from_spec(spec(ours)) as pipe:
            req = request([data])
            same_shape(name, ref(images=[hf_load(data)], return_tensors="pt"), pipe.process(req))
            ms = timed(lambda pipe=pipe, req=req: pipe.process(req), repeat)
        print(
            f"{name}: HF torchvision backend, torch threads={threads}: {tv_ms:8.1f} ms; "
            f"sglang-mm aten_u8 threads={ours}: {ms:8.1f} ms -> {tv_ms / ms:5.1f}x "
            "(target >= 2x)"
        )


def batch(images: list[bytes], repeat: int) -> None:
    """Alternate the two pool sizes run by run, so that load from elsewhere on the machine
    hits both alike; report the best run of each."""
    req = request(images)
    pipes = {t: pipeline_from_spec(spec(t)) for t in (0, 2)}
    times: dict[int, list[float]] = {0: [], 2: []}
    for pipe in pipes.values():
        pipe.process(req)  # warm-up (pool start, first faults)
    for _ in range(repeat):
        for t, pipe in pipes.items():
            t0 = time.perf_counter()
            pipe.process(req)
            times[t].append((time.perf_counter() - t0) * 1e3)
    for pipe in pipes.values():
        pipe.close()
    best = {t: min(v) for t, v in times.items()}
    print(
        f"batch of {len(images)} 1080p JPEGs in one request: threads=0 {best[0]:.1f} ms, "
        f"threads=2 {best[2]:.1f} ms -> {best[0] / best[2]:.2f}x throughput (target >= 1.7x; "
        f"{os.cpu_count()} cores; best of {repeat})"
    )


def main() -> None:
    hd = mosaic((1920, 1080), 2, 2, first=1)
    mp12 = mosaic((4000, 3000), 4, 2)
    print(f"inputs: 1080p JPEG {len(hd) / 1e3:.0f} kB, 12 MP JPEG {len(mp12) / 1e6:.1f} MB")
    peak_memory(mp12)
    end_to_end("1080p", hd, 3 if QUICK else 7)
    end_to_end("12MP ", mp12, 1 if QUICK else 3)
    batch([mosaic((1920, 1080), 2, 2, first=k) for k in range(8)], 2 if QUICK else 5)


if __name__ == "__main__":
    main()
