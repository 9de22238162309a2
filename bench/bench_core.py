"""Core kernels vs their references, side by side in one process; prints times and ratios.

  1. decode: JPEG and PNG of a 1080p photo vs Pillow (target ratio <= 1.05), from
     bench/_decode_section.py when it is present;
  2. resize: bicubic and Lanczos, 1920x1080 -> 1932x1092 and 4032x3024 -> 1288x966, vs Pillow's
     `Image.resize` (target >= 1.5x on one thread, and faster again on two), plus `aten_u8`
     (vs torchvision when torch is importable);
  3. hash: `content_hash` vs the Python `blake3` package (target >= 1 GB/s on one core);
  4. a 32k-token prompt with 16 images: `apply_layout` + `mrope_positions` (target < 1 ms).

Every timing is the best of several runs, the reference and ours interleaved, so both see the
same machine load. Run: .venv/bin/python bench/bench_core.py [--quick]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from blake3 import blake3
from PIL import Image
from skimage import data as skdata

from sglang_mm_core import _native
from sglang_mm_core.common import content_hash, resize_rgb
from sglang_mm_core.plugin import apply_layout, layout_by_placeholder, mrope_positions

QUICK = "--quick" in sys.argv
REPEATS = 3 if QUICK else 9


def best_ms(*fns: Callable[[], Any], repeats: int = REPEATS) -> list[float]:
    """Best wall time of each function in ms, the functions interleaved run by run."""
    times = [float("inf")] * len(fns)
    for fn in fns:
        fn()  # warm up (allocator, page faults, lazy init)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i] = min(times[i], time.perf_counter() - t0)
    return [t * 1e3 for t in times]


def photo(w: int, h: int) -> np.ndarray:
    """A w x h photograph: skimage's coffee, resized by Pillow's Lanczos."""
    img = Image.fromarray(skdata.coffee()).resize((w, h), Image.Resampling.LANCZOS)
    return np.ascontiguousarray(np.asarray(img))


def section_decode() -> list[str]:
    here = Path(__file__).parent
    if not (here / "_decode_section.py").exists():
        print("decode: bench/_decode_section.py not present, skipped\n")
        return []
    sys.path.insert(0, str(here))
    from _decode_section import bench_decode

    # It prints its own table; a list it returns names the targets it missed.
    result = bench_decode()
    print()
    return [str(line) for line in result] if isinstance(result, list) else []


def section_resize() -> list[str]:
    print(f"resize (ms, best of {REPEATS}; reference = Pillow, or torchvision for aten_u8)")
    print(
        f"  {'case':<24} {'filter':<8} {'ref':>8} {'ours@1':>8} {'x ref':>7}"
        f" {'ours@2':>8} {'@1/@2':>6}"
    )
    failures = []
    for (w, h), (ow, oh) in [((1920, 1080), (1932, 1092)), ((4032, 3024), (1288, 966))]:
        failures += _resize_case(photo(w, h), ow, oh)
    print(f"  kernel threads available: {_native.parallel_enabled()}\n")
    return failures


def _resize_case(src: np.ndarray, ow: int, oh: int) -> list[str]:
    im = Image.fromarray(src)
    case = f"{im.width}x{im.height} -> {ow}x{oh}"
    failures = []
    for name, flt in [("bicubic", Image.Resampling.BICUBIC), ("lanczos", Image.Resampling.LANCZOS)]:
        resample: Any = f"pil_{name}"
        want = np.asarray(im.resize((ow, oh), flt))
        for t in (1, 2):
            if not np.array_equal(resize_rgb(src, ow, oh, resample, threads=t), want):
                raise SystemExit(f"resize {resample} {case} differs from Pillow")
        pil, one, two = best_ms(
            lambda flt=flt: im.resize((ow, oh), flt),
            lambda r=resample: resize_rgb(src, ow, oh, r, threads=1),
            lambda r=resample: resize_rgb(src, ow, oh, r, threads=2),
        )
        _row(case, name, pil, one, two)
        if pil / one < 1.5:
            failures.append(f"resize {name} {case}: {pil / one:.2f}x Pillow on one thread")
        if two >= one:
            failures.append(f"resize {name} {case}: two threads not faster than one")
    fns = [
        lambda: resize_rgb(src, ow, oh, "aten_u8", threads=1),
        lambda: resize_rgb(src, ow, oh, "aten_u8", threads=2),
    ]
    tv = _torchvision_resize()
    if tv is not None:
        chw = tv[0](src)
        fns.append(lambda: tv[1](chw, ow, oh))
    times = best_ms(*fns)
    _row(case, "aten_u8", times[2] if tv else None, times[0], times[1])
    return failures


def _row(case: str, name: str, ref: float | None, one: float, two: float) -> None:
    cols = f"{ref:8.2f} {one:8.2f} {ref / one:6.2f}x" if ref else f"{'-':>8} {one:8.2f} {'':>7}"
    print(f"  {case:<24} {name:<8} {cols} {two:8.2f} {one / two:5.2f}x")


def _torchvision_resize() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """torchvision's uint8 antialiased bicubic (one torch thread), when torch is importable."""
    try:
        import torch
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms.v2 import functional as F
    except ImportError:
        return None
    torch.set_num_threads(1)

    def to_chw(a: np.ndarray) -> Any:
        return torch.from_numpy(a).permute(2, 0, 1).contiguous()

    def run(t: Any, ow: int, oh: int) -> Any:
        return F.resize(t, [oh, ow], interpolation=InterpolationMode.BICUBIC, antialias=True)

    return to_chw, run


def section_hash() -> list[str]:
    size = (16 if QUICK else 64) << 20
    data = np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8).tobytes()
    assert content_hash(data) == int.from_bytes(blake3(data).digest()[:8], "big")
    ours, ref = best_ms(lambda: content_hash(data), lambda: blake3(data).digest())
    gbs = size / ours / 1e6
    print(f"hash of {size >> 20} MiB (ms): blake3 package {ref:.2f}, content_hash {ours:.2f}")
    print(f"  content_hash {gbs:.2f} GB/s, blake3 package {size / ref / 1e6:.2f} GB/s\n")
    return [] if gbs >= 1.0 else [f"hash: {gbs:.2f} GB/s on one core"]


def section_layout() -> list[str]:
    """16 images of 1,600 tokens each in a prompt that expands to 32,768 tokens."""
    n_images, tokens_each, total = 16, 1600, 32_768
    grid = (1, 40, 40)
    text = total - n_images * tokens_each
    placeholder = 151_655
    ids = np.random.default_rng(1).integers(0, 150_000, text + n_images, dtype=np.int64)
    slots = np.linspace(10, len(ids) - 10, n_images).astype(int)
    ids[slots] = placeholder
    counts = [tokens_each] * n_images

    def run() -> Any:
        layout = layout_by_placeholder(ids, placeholder, counts)
        expanded = apply_layout(ids, layout, n_images)
        return mrope_positions(len(expanded.input_ids), expanded.offsets, [grid] * n_images)

    out = run()
    assert out.positions.shape == (3, total)
    layout = layout_by_placeholder(ids, placeholder, counts)
    expanded = apply_layout(ids, layout, n_images)
    both, apply_only, rope_only = best_ms(
        run,
        lambda: apply_layout(ids, layout, n_images),
        lambda: mrope_positions(total, expanded.offsets, [grid] * n_images),
        repeats=REPEATS * 20,
    )
    print("32k-token prompt, 16 images (ms): layout_by_placeholder + apply_layout +")
    print(f"  mrope_positions {both:.3f} (apply_layout {apply_only:.3f}, mrope {rope_only:.3f})\n")
    return [] if both < 1.0 else [f"layout + MRoPE: {both:.3f} ms for 32k tokens"]


def main() -> None:
    failures = section_decode()
    failures += section_resize()
    failures += section_hash()
    failures += section_layout()
    if failures:
        print("targets missed:")
        for f in failures:
            print(f"  - {f}")
    else:
        print("all targets met")


if __name__ == "__main__":
    main()
