"""Generate the goldens of transformers' Kimi K2.5 classes that the CI replays without torch (run
it where torch is: ``/work/torchenv/bin/python plugins/kimi/tests/gen_goldens.py``).

``fixtures/aten_goldens.json``:

- ``cases``: ``Kimi_K25ImageProcessor`` (the torchvision backend, the only one transformers has
  for Kimi; CPU) over the corpus of _kimi_corpus.py, each image given as a PIL RGB image with
  the case's keywords. Per case: the SHA-256 of the float32 ``pixel_values`` with its shape and
  a few sample values (fixtures stay small), ``image_grid_thw``,
  ``get_number_of_image_patches`` (the header-only count), and the input's SHA-256 so that a
  changed corpus is reported as such.
- ``prompts``: ``Kimi_K25Processor`` (image processor above, a tokenizer built from Kimi's real
  special-token ids in _kimi_refs.py, no download) on chat prompts with one to three images:
  the expanded ``input_ids`` whole, and the SHA-256 of the batch's ``pixel_values``.

The versions and aten's CPU capability are recorded: on x86-64 aten runs its AVX2 uint8
bicubic kernel, which the core's ``aten_u8`` resampler matches."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _kimi_corpus import CASES, SAMPLES, hf_kwargs, make_input  # noqa: E402
from _kimi_refs import hf_tokenizer, prompt  # noqa: E402

OUT = HERE / "fixtures" / "aten_goldens.json"
# (id, images as corpus sources): prompts for the processor's token expansion.
PROMPTS = [
    ("one", [{"noise": [100, 60, 1]}]),
    ("two", [{"photo": "chelsea.png"}, {"noise": [1, 1, 2]}]),
    ("three", [{"noise": [3000, 17, 3]}, {"photo": "coffee.webp"}, {"noise": [1806, 1806, 4]}]),
]


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def main() -> None:
    import PIL
    import torch
    import torchvision
    import transformers
    from PIL import Image
    from transformers.models.kimi_k25.image_processing_kimi_k25 import Kimi_K25ImageProcessor
    from transformers.models.kimi_k25.processing_kimi_k25 import Kimi_K25Processor
    from transformers.models.kimi_k25.video_processing_kimi_k25 import Kimi_K25VideoProcessor

    cases = []
    for cid, source, params in CASES:
        arr = make_input(source)
        proc = Kimi_K25ImageProcessor(**hf_kwargs(params))
        out = proc(images=[Image.fromarray(arr)], return_tensors="pt")
        pv = out["pixel_values"].numpy()
        grid = out["image_grid_thw"].numpy()
        assert pv.dtype == np.float32 and grid.dtype == np.int64
        h, w = arr.shape[:2]
        cases.append(
            {
                "id": cid,
                "source": source,
                "params": params,
                "input_sha256": sha256(arr),
                "pixel_values_shape": list(pv.shape),
                "pixel_values_sha256": sha256(pv),
                "samples": [float(pv[p, c, y, x]) for p, c, y, x in SAMPLES],
                "image_grid_thw": grid.tolist(),
                "num_image_patches": proc.get_number_of_image_patches(h, w, {}),
            }
        )
        print(f"{cid}: {w}x{h} -> grid {grid.tolist()}, {list(pv.shape)}")

    processor = Kimi_K25Processor(
        image_processor=Kimi_K25ImageProcessor(),
        tokenizer=hf_tokenizer(),
        video_processor=Kimi_K25VideoProcessor(),
    )
    prompts = []
    for pid, sources in PROMPTS:
        text = prompt(len(sources))
        images = [Image.fromarray(make_input(s)) for s in sources]
        out = processor(text=[text], images=images, return_tensors="np")
        prompts.append(
            {
                "id": pid,
                "text": text,
                "sources": sources,
                "input_ids": out["input_ids"][0].tolist(),
                "image_grid_thw": out["image_grid_thw"].tolist(),
                "pixel_values_sha256": sha256(out["pixel_values"]),
            }
        )
    meta = {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
        "PIL": PIL.__version__,
        "machine": platform.machine(),
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "reference": "transformers Kimi_K25ImageProcessor (torchvision backend) and "
        "Kimi_K25Processor, CPU",
        "generator": "plugins/kimi/tests/gen_goldens.py",
        "sample_points": SAMPLES,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    body: dict[str, Any] = {"meta": meta, "cases": cases, "prompts": prompts}
    OUT.write_text(json.dumps(body, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
