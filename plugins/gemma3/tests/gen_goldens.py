"""Generate the torchvision-backend goldens that the CI replays without torch (run it where torch
is, e.g. ``/path/to/torchenv/bin/python plugins/gemma3/tests/gen_goldens.py``):

``fixtures/aten_goldens.json``: HuggingFace's default Gemma 3 image processor
(``Gemma3ImageProcessor``, torchvision backend, on the CPU) with google/gemma-3-*-it's settings,
with and without pan and scan, over photos and seeded noise of edge sizes. Each golden is the
SHA-256 of the float32 ``pixel_values`` plus a few sample values (fixtures must stay small), and
the input's SHA-256 so that a changed corpus is reported as such. The versions and aten's CPU
capability are recorded: on x86-64 aten runs its AVX2 uint8 kernel, which ``aten_u8`` matches
(aten's portable loops round bilinear differently; see tests/fixtures/gen_aten_u8.py)."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _gemma3_corpus import SAMPLES, make_input

OUT = Path(__file__).parent / "fixtures" / "aten_goldens.json"

# (id, source, pan_and_scan); sources: {"photo": name} or {"noise": [w, h, seed]}
CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("astronaut", {"photo": "astronaut"}, False),
    ("chelsea", {"photo": "chelsea"}, False),
    ("coffee-pas", {"photo": "coffee"}, True),
    ("rocket-pas", {"photo": "rocket"}, True),
    ("1x1", {"noise": [1, 1, 1]}, False),
    ("17x300", {"noise": [17, 300, 2]}, False),
    ("895x897", {"noise": [895, 897, 3]}, False),
    ("1920x1080", {"noise": [1920, 1080, 4]}, False),
    ("601x500-pas", {"noise": [601, 500, 5]}, True),
    ("599x500-pas", {"noise": [599, 500, 6]}, True),
    ("500x601-pas", {"noise": [500, 601, 7]}, True),
    ("2000x300-pas", {"noise": [2000, 300, 8]}, True),
    ("1023x511-pas", {"noise": [1023, 511, 9]}, True),
]


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def samples(pv: np.ndarray) -> list[list[float]]:
    """Per crop, a few values (as float32 bit patterns would be overkill: floats round-trip)."""
    return [[float(crop[c, y, x]) for c, y, x in SAMPLES] for crop in pv]


def main() -> None:
    import torch
    import torchvision
    import transformers
    from PIL import Image
    from transformers import Gemma3ImageProcessor

    def processor(pas: bool) -> Any:
        return Gemma3ImageProcessor(
            size={"height": 896, "width": 896},
            resample=Image.Resampling.BILINEAR,
            rescale_factor=1 / 255,
            image_mean=[0.5, 0.5, 0.5],
            image_std=[0.5, 0.5, 0.5],
            do_pan_and_scan=pas,
            pan_and_scan_min_crop_size=256,
            pan_and_scan_max_num_crops=4,
            pan_and_scan_min_ratio_to_activate=1.2,
        )

    entries = []
    for cid, source, pas in CASES:
        arr = make_input(source)
        out = processor(pas)(Image.fromarray(arr), return_tensors="pt")
        pv = out["pixel_values"].numpy().astype(np.float32, copy=False)
        entries.append(
            {
                "id": cid,
                "source": source,
                "pan_and_scan": pas,
                "input_sha256": sha256(arr),
                "pixel_values_shape": list(pv.shape),
                "pixel_values_sha256": sha256(pv),
                "num_crops": [int(v) for v in out["num_crops"].reshape(-1)],
                "samples": samples(pv),
            }
        )
        print(f"{cid}: {arr.shape} -> {list(pv.shape)}")
    meta = {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
        "machine": platform.machine(),
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "reference": "transformers.Gemma3ImageProcessor (torchvision backend), CPU",
        "sample_points": SAMPLES,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"meta": meta, "cases": entries}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
