"""One image's latency per family: bytes -> feature through `Pipeline.process` on one thread
(``threads: 0``) and on two (``threads: 2``, the one item gets both), against Pillow's
decode-only time of the same file (``Image.open(...).convert("RGB")``), interleaved in one
process; medians and ratios.

Goals (issue #28): with 2 threads at most 1.15x Pillow's decode-only time for a 1080p JPEG and
1.3x for a 12 MP one, for Qwen-VL (both resamplers), InternVL, Gemma 3 and Pixtral; the
one-thread column is the no-regression check against an older build (run this file under each
and compare the ratios, which the Pillow column normalises for machine load). On a machine
shared with other busy processes the second thread often finds no free core, and the
two-thread column then drifts towards the one-thread one.

Run: .venv/bin/python bench/bench_latency.py [--quick] [--sizes 1080p,12MP]
     [--families qwen_vl:pil,gemma3] [--json out.json]"""

from __future__ import annotations

import argparse
import io
import json
import os
from typing import Any

from _images import mosaic
from _timing import interleaved
from PIL import Image

from sglang_mm_core import MmInput, pipeline_from_spec

SIZES = {"640x480": (640, 480), "1080p": (1920, 1080), "12MP": (4032, 3024)}
REPEATS = {"640x480": 41, "1080p": 15, "12MP": 7}
# (label, family, params): the default params but for the resampler.
FAMILIES = [
    ("qwen_vl:pil", "qwen_vl", {"resample": "pil"}),
    ("qwen_vl:aten_u8", "qwen_vl", {"resample": "aten_u8"}),
    ("internvl", "internvl", {}),
    ("gemma3", "gemma3", {}),
    ("pixtral", "pixtral", {}),
    ("gemma4", "gemma4", {}),
    ("inkling", "inkling", {}),
    ("deepseek_v41", "deepseek_v41", {}),
]
# The 2-thread goals: ours / Pillow decode-only.
GOALS = {"1080p": 1.15, "12MP": 1.3}
GOAL_FAMILIES = {"qwen_vl:pil", "qwen_vl:aten_u8", "internvl", "gemma3", "pixtral"}


def pillow_decode(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--families", default=",".join(f[0] for f in FAMILIES))
    ap.add_argument("--json", default=None, help="also write the medians here")
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    wanted = set(args.families.split(","))
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    print(
        f"{'family':<18} {'image':>8} {'Pillow':>8} {'1 thread':>9} {'2 threads':>10} "
        f"{'1t/Pil':>7} {'2t/Pil':>7}  goal"
    )
    results: dict[str, Any] = {}
    for size in sizes:
        data = mosaic(SIZES[size], 2, 2, first=1)
        repeat = 3 if args.quick else REPEATS[size]
        for label, family, params in FAMILIES:
            if label not in wanted:
                continue
            pipes = {
                t: pipeline_from_spec({"family": family, "params": params, "threads": t})
                for t in (0, 2)
            }
            req = MmInput(input_ids=pipes[0].family.example_prompt(1), images=[data])
            one = pipes[0].process(req).items[0].feature.array
            two = pipes[2].process(req).items[0].feature.array
            assert one.tobytes() == two.tobytes(), f"{label} {size}: threads changed the bits"
            med = interleaved(
                {
                    "pillow": lambda d=data: pillow_decode(d),
                    "t1": lambda p=pipes[0], r=req: p.process(r),
                    "t2": lambda p=pipes[2], r=req: p.process(r),
                },
                repeat,
            )
            for p in pipes.values():
                p.close()
            r1, r2 = med["t1"] / med["pillow"], med["t2"] / med["pillow"]
            goal = ""
            if label in GOAL_FAMILIES and size in GOALS:
                ok = r2 <= GOALS[size]
                goal = f"<= {GOALS[size]} {'ok' if ok else 'MISSED'}"
            print(
                f"{label:<18} {size:>8} {med['pillow']:8.1f} {med['t1']:9.1f} {med['t2']:10.1f} "
                f"{r1:7.2f} {r2:7.2f}  {goal}"
            )
            results[f"{label} {size}"] = med
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
