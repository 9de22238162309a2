"""Driver overhead: the GIL-held Python time of one one-image request, that is
``Pipeline.process`` minus its kernels (content hash, decode, ``process_item``), on a 56x56
PNG at one thread (inline, no pool). Target: at most 50 us. The steps after the kernels
(the family's layout, the expansion, the positions) are timed on their own too, to show
where the rest goes. Samples are interleaved (process, kernels, process, ...), medians.

Run: .venv/bin/python bench/bench_driver.py [--quick] [--family qwen_vl|inkling|...]"""

from __future__ import annotations

import io
import statistics
import sys
import time
from collections.abc import Callable

from PIL import Image

from sglang_mm_core import MmInput, _native, pipeline_from_spec
from sglang_mm_core._layout import apply_layout

QUICK = "--quick" in sys.argv
ROUNDS = 2_000 if QUICK else 20_000


def _arg(name: str, default: str) -> str:
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


def interleaved_us(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median microseconds of each function, sampled in turn so drift hits them alike."""
    for fn in fns.values():
        for _ in range(200):
            fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    clock = time.perf_counter
    for _ in range(rounds):
        for name, fn in fns.items():
            t = clock()
            fn()
            samples[name].append(clock() - t)
    return {k: statistics.median(v) * 1e6 for k, v in samples.items()}


def small_png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (56, 56), (90, 120, 30)).save(buf, "PNG")
    return buf.getvalue()


def main() -> None:
    family = _arg("--family", "qwen_vl")
    small = small_png()
    with pipeline_from_spec({"family": family, "threads": 0}) as pipe:
        fam = pipe.family
        req = MmInput(list(fam.example_prompt(1)), [small])
        d, lim = pipe.spec.spec.decode, pipe.spec.spec.limits
        alpha, exif = d.alpha or "white", bool(d.exif_orientation)

        def kernels() -> None:
            _native.content_hash(small)
            img = _native.image_decode_rgb(
                small,
                alpha=alpha,
                exif_orientation=exif,
                max_pixels=lim.max_image_pixels,
                max_side=lim.max_image_side,
            )
            fam.process_item(img)

        out = pipe.process(req)
        ids = pipe._check(req)
        geos = [it.geometry for it in out.items]
        plans = [fam.checked_plan(56, 56)]
        lay = fam.layout(ids, plans)
        ex = apply_layout(ids, lay, len(geos))
        steps: dict[str, Callable[[], object]] = {
            "process": lambda: pipe.process(req),
            "kernels": kernels,
            "family.plan": lambda: fam.checked_plan(56, 56),
            "family.layout": lambda: fam.layout(ids, plans),
            "apply_layout": lambda: apply_layout(ids, lay, len(geos)),
            "family.positions": lambda: fam.positions(
                len(ex.input_ids), ex.offsets, geos, ex.input_ids
            ),
        }
        got = interleaved_us(steps, ROUNDS)
    over = got["process"] - got["kernels"]
    print(f"{family}, one 56x56 PNG, inline: median of {ROUNDS} interleaved rounds")
    print(
        f"  process {got['process']:.1f} us - kernels {got['kernels']:.1f} us = "
        f"driver overhead {over:.1f} us (target <= 50 us)"
    )
    for k in ("family.plan", "family.layout", "apply_layout", "family.positions"):
        print(f"  of which {k}: {got[k]:.1f} us")


if __name__ == "__main__":
    main()
