"""`sglang_mm_sglang` vs SGLang's compiled extension it replaces, interleaved in
one process, one thread each (``SGL_MM_RS_THREADS=1``, read by both sides); prints medians
and ratios (goal: >= 3x faster on each).

  qwen_vl.preprocess      bytes -> pixel_values, Qwen2-VL params, both resamplers
  qwen_vl.process_mm      one request of one image (ids expanded, MRoPE)
  inkling.decode_patchify bytes -> bf16 patches, SGLang's defaults (ps 40, 2.0, cap 2048)

on 640x480, 1080p and 12 MP JPEGs (photo mosaics). The extension is the .so `make sglang-ext`
takes out of the sglang 0.5.23 wheel (`make bench` does).

Run: .venv/bin/python bench/bench_compat.py [--quick]"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

# Both sides read their pool size on first use: one thread each, set before either loads.
os.environ.pop("SGLANG_MM_THREADS", None)
os.environ["SGL_MM_RS_THREADS"] = "1"

from _images import mosaic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compat" / "sglang" / "tests"))
import sglang_mm_sglang as ours
from compat_helpers import load_extension  # the same loader as the parity tests

QUICK = "--quick" in sys.argv
SIZES = {"640x480": (640, 480), "1080p": (1920, 1080), "12MP": (4000, 3000)}
REPEATS = {"640x480": 41, "1080p": 15, "12MP": 7}
IMG = 151655


def qwen_spec(resample: str) -> str:
    return json.dumps(
        {
            "family": "qwen_vl",
            "feature_shm": False,
            "image_token_id": IMG,
            "patch_size": 14,
            "merge_size": 2,
            "temporal_patch_size": 2,
            "min_pixels": 3136,
            "max_pixels": 12845056,
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_std": [0.26862954, 0.26130258, 0.27577711],
            "resample": resample,
        }
    )


def interleaved(
    a: Callable[[], object], b: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """Median ms of ``a`` and ``b``, called alternately (so drift hits both alike), after one
    warm-up call each."""
    a()
    b()
    ta, tb = [], []
    for _ in range(repeat):
        for fn, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return statistics.median(ta) * 1e3, statistics.median(tb) * 1e3


def row(name: str, size: str, theirs: float, mine: float) -> float:
    ratio = theirs / mine
    print(f"{name:<38} {size:>8} {theirs:9.1f} ms {mine:9.1f} ms {ratio:6.2f}x")
    return ratio


Case = tuple[str, Callable[[], object], Callable[[], object]]


def cases(ext: ModuleType, data: bytes) -> list[Case]:
    """``(name, extension call, our call)`` per function on one image; each pair's outputs are
    checked to be the same amount of work (same grids, ids and patch counts) first."""
    out: list[Case] = []
    for resample in ("aten_u8", "pil"):
        s = qwen_spec(resample)
        got, want = ours.qwen_vl.preprocess(data, s), ext.qwen_vl.preprocess(data, s)
        assert got[1] == tuple(want[1]) and got[0].shape == want[0].shape
        out.append(
            (
                f"qwen_vl.preprocess ({resample})",
                lambda s=s: ext.qwen_vl.preprocess(data, s),
                lambda s=s: ours.qwen_vl.preprocess(data, s),
            )
        )
    s = qwen_spec("aten_u8")
    ids = [1, 2, 151652, IMG, 151653, 3]
    assert ours.qwen_vl.process_mm(ids, [data], s)[0] == ext.qwen_vl.process_mm(ids, [data], s)[0]
    out.append(
        (
            "qwen_vl.process_mm (aten_u8)",
            lambda: ext.qwen_vl.process_mm(ids, [data], s),
            lambda: ours.qwen_vl.process_mm(ids, [data], s),
        )
    )
    args = (40, 2.0, 2048)
    mine, theirs = (
        ours.inkling.decode_patchify(data, *args),
        ext.inkling.decode_patchify(data, *args),
    )
    assert mine[:2] == theirs[:2] and mine[2].shape == theirs[2].shape
    out.append(
        (
            "inkling.decode_patchify (40, 2, 2048)",
            lambda: ext.inkling.decode_patchify(data, *args),
            lambda: ours.inkling.decode_patchify(data, *args),
        )
    )
    return out


def main() -> None:
    try:
        ext = load_extension()
    except RuntimeError as e:  # the .so is missing
        raise SystemExit(str(e)) from None
    print(f"cores: {os.cpu_count()}; one thread each (SGL_MM_RS_THREADS=1)")
    print(f"{'function':<38} {'image':>8} {'extension':>12} {'sglang-mm':>12} {'ratio':>7}")
    ratios: list[float] = []
    for size, wh in SIZES.items():
        data = mosaic(wh, 2, 2, first=1)
        repeat = 3 if QUICK else REPEATS[size]
        for name, theirs, mine in cases(ext, data):
            t, m = interleaved(theirs, mine, repeat)
            ratios.append(row(name, size, t, m))
    print(f"smallest ratio {min(ratios):.2f}x (goal >= 3x on each)")


if __name__ == "__main__":
    main()
