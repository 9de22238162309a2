"""Generate the torchvision-backend goldens that the CI replays without torch (run it where torch
is, e.g. ``/path/to/torchenv/bin/python plugins/gemma4/tests/gen_goldens.py``):

``fixtures/aten_goldens.json``: HuggingFace's default Gemma 4 image processor
(``Gemma4ImageProcessor``, torchvision backend, on the CPU) with google/gemma-4-*'s settings (its
class defaults: BICUBIC, rescale by 1/255, no normalize) at the case's ``max_soft_tokens``, over
photos and seeded noise of edge sizes (_gemma4_corpus.py). Each golden is the SHA-256 of the
float32 ``pixel_values`` plus a few sample values (fixtures must stay small), the SHA-256 of the
int64 ``image_position_ids`` with the patch grid they describe, ``num_soft_tokens_per_image``,
and the input's SHA-256 so that a changed corpus is reported as such. The versions and aten's
CPU capability are recorded: on x86-64 aten runs its AVX2 uint8 bicubic kernel, which
``aten_u8`` matches."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _gemma4_corpus import CASES, SAMPLES, make_input

OUT = Path(__file__).parent / "fixtures" / "aten_goldens.json"


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def main() -> None:
    import PIL
    import torch
    import torchvision
    import transformers
    from PIL import Image
    from transformers import Gemma4ImageProcessor

    entries = []
    for cid, source, tokens in CASES:
        arr = make_input(source)
        proc = Gemma4ImageProcessor(max_soft_tokens=tokens)
        out = proc(images=[Image.fromarray(arr)], return_tensors="pt")
        pv = out["pixel_values"][0].numpy()
        pos = out["image_position_ids"][0].numpy()
        assert pv.dtype == np.float32 and pos.dtype == np.int64
        real = pos[pos[:, 0] >= 0]
        entries.append(
            {
                "id": cid,
                "source": source,
                "max_soft_tokens": tokens,
                "input_sha256": sha256(arr),
                "pixel_values_shape": list(pv.shape),
                "pixel_values_sha256": sha256(pv),
                "samples": [float(pv[p, i]) for p, i in SAMPLES],
                "image_position_ids_sha256": sha256(pos),
                # (rows, cols) of real patches, which the position ids list in row-major order.
                "patch_grid": [int(real[:, 1].max()) + 1, int(real[:, 0].max()) + 1],
                "num_soft_tokens_per_image": [int(v) for v in out["num_soft_tokens_per_image"]],
            }
        )
        print(f"{cid}: {arr.shape} -> grid {entries[-1]['patch_grid']}, {list(pv.shape)}")
    meta = {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
        "PIL": PIL.__version__,
        "machine": platform.machine(),
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "reference": "transformers.Gemma4ImageProcessor (torchvision backend), CPU",
        "sample_points": SAMPLES,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    body: dict[str, Any] = {"meta": meta, "cases": entries}
    OUT.write_text(json.dumps(body, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
