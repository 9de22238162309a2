"""Generate the fixtures the CI replays without torch (run where torch is, e.g.
``/work/torchenv/bin/python plugins/pixtral/tests/gen_goldens.py``):

- ``fixtures/aten_goldens.npz`` + ``.json``: HF's torchvision backend (``PixtralImageProcessor``
  on the CPU) over the photo corpus and generated edge sizes, for Pixtral-12B's and Mistral 3's
  params. Small outputs are stored whole; larger ones as the SHA-256 of their float32 bytes plus
  a few sampled pixel rows.
- ``fixtures/processor_goldens.json``: HF's ``PixtralProcessor``, imported as transformers
  ships it (with torch), expanding prompts with several images on a locally built tokenizer.

The torch, torchvision, transformers, numpy and Pillow versions are recorded, and every input
image's SHA-256 (a changed corpus is reported as such, not as a parity failure)."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _pixtral_refs import MODELS, PHOTOS, gradient, local_tokenizer, noise, photo

FIXTURES = Path(__file__).parent / "fixtures"
FULL_LIMIT = 64 * 1024  # bytes of pixel_values stored whole
MAX_FIXTURE_BYTES = 3 * 1024 * 1024
EDGE_SIZES = [(1, 1), (5, 3), (17, 33), (1, 300), (300, 1), (640, 480), (1025, 1000),
              (2048, 1536), (1540, 1541), (3000, 17), (27, 29)]  # fmt: skip


def all_levels(width: int, height: int) -> np.ndarray:
    """Every sample value 0..255 in every channel (exercises the whole normalize table)."""
    i = np.arange(width * height).reshape(height, width)
    return np.dstack([(i + 85 * c) % 256 for c in range(3)]).astype(np.uint8)


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for model in sorted(MODELS):
        for name in PHOTOS:
            out.append({"id": f"{model}-{name}", "model": model, "source": {"photo": name}})
        out.append({"id": f"{model}-levels", "model": model, "source": {"stored": True},
                    "array": all_levels(64, 64)})  # fmt: skip
        for w, h in EDGE_SIZES:
            seed = w * 7 + h
            out.append({"id": f"{model}-noise-{w}x{h}", "model": model,
                        "source": {"noise": [w, h, seed]}})  # fmt: skip
            out.append({"id": f"{model}-gradient-{w}x{h}", "model": model,
                        "source": {"gradient": [w, h]}})  # fmt: skip
    return out


def source_array(case: dict[str, Any]) -> np.ndarray:
    src = case["source"]
    if "array" in case:
        return case["array"]
    if "photo" in src:
        return np.asarray(photo(src["photo"]))
    if "noise" in src:
        w, h, seed = src["noise"]
        return np.asarray(noise(w, h, seed=seed))
    return np.asarray(gradient(*src["gradient"]))


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def sample_rows(n: int) -> list[int]:
    return sorted({0, n // 3, (2 * n) // 3, n - 1})


def gen_aten(versions: dict[str, str]) -> None:
    from PIL import Image
    from transformers import PixtralImageProcessor

    arrays: dict[str, np.ndarray] = {}
    meta = []
    for case in cases():
        arr = source_array(case)
        proc = PixtralImageProcessor(**MODELS[case["model"]][1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = proc(images=[Image.fromarray(arr)], return_tensors="pt")
        pv = out["pixel_values"][0].numpy()
        assert pv.dtype == np.float32, pv.dtype
        entry: dict[str, Any] = {
            "id": case["id"],
            "model": case["model"],
            "source": case["source"],
            "input_sha256": sha256(arr),
            "image_sizes": [int(v) for v in out["image_sizes"][0]],
            "pixel_values_shape": list(pv.shape),
            "pixel_values_sha256": sha256(pv),
        }
        if case["source"].get("stored"):
            arrays[f"{case['id']}/input"] = arr
        if pv.nbytes <= FULL_LIMIT or case["source"].get("stored"):
            entry["stored"] = "full"
            arrays[f"{case['id']}/pixel_values"] = pv
        else:
            entry["stored"] = "rows"
            entry["rows"] = sample_rows(pv.shape[1])
            arrays[f"{case['id']}/rows"] = pv[:, entry["rows"], :]
        meta.append(entry)
    doc = {
        "generator": "plugins/pixtral/tests/gen_goldens.py",
        **versions,
        "reference": "transformers.PixtralImageProcessor (torchvision backend, CPU)",
        "models": {m: {"params": p, "hf_kwargs": k} for m, (p, k) in MODELS.items()},
        "cases": meta,
    }
    FIXTURES.mkdir(exist_ok=True)
    np.savez_compressed(FIXTURES / "aten_goldens.npz", **arrays)
    (FIXTURES / "aten_goldens.json").write_text(json.dumps(doc, indent=1) + "\n")
    size = (FIXTURES / "aten_goldens.npz").stat().st_size
    assert size < MAX_FIXTURE_BYTES, size


PROMPTS = [
    ("hello [IMG] world", [(40, 20)]),
    ("[INST] hello [IMG] world [IMG] [IMG] hello [/INST]", [(17, 33), (1300, 77), (640, 480)]),
    ("[IMG] [IMG]", [(1, 1), (2, 1600)]),
]


def gen_processor(versions: dict[str, str]) -> None:
    """The genuine ``PixtralProcessor`` (its module as transformers ships it, with torch)."""
    from transformers import PixtralImageProcessorPil, PixtralProcessor

    cases_out = []
    for model, (params, hf_kwargs) in sorted(MODELS.items()):
        proc = PixtralProcessor(
            image_processor=PixtralImageProcessorPil(**hf_kwargs),
            tokenizer=local_tokenizer(),
            patch_size=params.get("patch_size", 16),
            spatial_merge_size=params.get("spatial_merge_size", 1),
        )
        for text, sizes in PROMPTS:
            images = [noise(w, h, seed=k) for k, (w, h) in enumerate(sizes)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = proc(text=[text], images=images, return_tensors="np")
            cases_out.append({
                "model": model,
                "text": text,
                "image_sizes_in": [list(s) for s in sizes],
                "image_sizes": np.asarray(out["image_sizes"]).tolist(),
                "input_ids": np.asarray(out["input_ids"][0]).tolist(),
            })  # fmt: skip
    doc = {"generator": "plugins/pixtral/tests/gen_goldens.py", **versions,
           "reference": "transformers.PixtralProcessor", "cases": cases_out}  # fmt: skip
    (FIXTURES / "processor_goldens.json").write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    import PIL
    import torch
    import torchvision
    import transformers

    versions = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
        "pillow": PIL.__version__,
    }
    torch.set_num_threads(1)
    gen_aten(versions)
    gen_processor(versions)


if __name__ == "__main__":
    main()
