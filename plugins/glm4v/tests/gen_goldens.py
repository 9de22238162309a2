"""Generate the image goldens that the CI replays without torch (run it where torch is, e.g.
``/work/torchenv/bin/python plugins/glm4v/tests/gen_goldens.py``):

- ``fixtures/aten_goldens.json``: HuggingFace's default (torchvision) image processors,
  ``Glm4vImageProcessor`` or ``Glm46VImageProcessor`` by the case's model type, on the CPU, with
  the case's ``size`` (_glm4v_corpus.py: photos and seeded noise around the temporal-aware
  resize's edges). Each golden is the SHA-256 of the float32 ``pixel_values`` plus a few sample
  values, ``image_grid_thw``, and the input's SHA-256 so that a changed corpus shows as such.
- ``fixtures/rope_goldens.json``: the prompts of ``ROPE_CASES`` through the model type's
  processor (``Glm4vProcessor`` for ``glm4v`` and ``glm4v_moe``, ``Glm46VProcessor``) on the
  local tokenizer with its ids, and the positions of the model class's ``get_rope_index``
  (``Glm4vModel``, ``Glm4vMoeModel``, ``Glm46VModel``) on the processor's ``input_ids``,
  ``mm_token_type_ids`` and ``image_grid_thw``.

The versions and aten's CPU capability are recorded."""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _glm4v_corpus import CASES, ROPE_CASES, SAMPLES, SHIPPED, make_input
from _glm4v_tokenizer import hf_tokenizer

FIXTURES = Path(__file__).parent / "fixtures"
MERGE = 2


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def image_processor(model_type: str, size: dict[str, int]) -> Any:
    from transformers import Glm4vImageProcessor, Glm46VImageProcessor

    cls = Glm46VImageProcessor if model_type == "glm46v" else Glm4vImageProcessor
    return cls(size=size)


def model_class(model_type: str) -> Any:
    from transformers.models.glm4v.modeling_glm4v import Glm4vModel
    from transformers.models.glm4v_moe.modeling_glm4v_moe import Glm4vMoeModel
    from transformers.models.glm46v.modeling_glm46v import Glm46VModel

    return {"glm4v": Glm4vModel, "glm4v_moe": Glm4vMoeModel, "glm46v": Glm46VModel}[model_type]


def rope(model_type: str, got: Any) -> tuple[list[list[int]], int]:
    """``get_rope_index`` of the model class on a stub carrying the config it reads
    (``vision_config.spatial_merge_size`` 2), fed the processor's outputs as torch tensors."""
    import torch

    cls = model_class(model_type)
    vision = types.SimpleNamespace(spatial_merge_size=MERGE)
    stub = types.SimpleNamespace(config=types.SimpleNamespace(vision_config=vision))
    stub.get_vision_position_ids = functools.partial(cls.get_vision_position_ids, stub)
    kwargs = {
        key: torch.tensor(np.asarray(got[key])) if key in got else None
        for key in ("image_grid_thw", "video_grid_thw")
    }
    pos, delta = cls.get_rope_index(
        stub,
        torch.tensor(np.asarray(got["input_ids"])),
        mm_token_type_ids=torch.tensor(np.asarray(got["mm_token_type_ids"])),
        **kwargs,
    )
    return pos[:, 0, :].tolist(), int(delta.reshape(-1)[0])


def processor(model_type: str) -> Any:
    """The model type's processor: its torchvision image processor at the shipped size, the
    local tokenizer, its video processor (class defaults)."""
    from transformers import (
        Glm4vProcessor,
        Glm4vVideoProcessor,
        Glm46VProcessor,
        Glm46VVideoProcessor,
    )

    glm46v = model_type == "glm46v"
    return (Glm46VProcessor if glm46v else Glm4vProcessor)(
        image_processor=image_processor(model_type, SHIPPED),
        tokenizer=hf_tokenizer(model_type),
        video_processor=(Glm46VVideoProcessor if glm46v else Glm4vVideoProcessor)(),
    )


def aten_goldens() -> list[dict[str, Any]]:
    from PIL import Image

    entries = []
    for cid, source, model_type, size in CASES:
        arr = make_input(source)
        proc = image_processor(model_type, size)
        out = proc(images=[Image.fromarray(arr)], return_tensors="pt")
        pv = out["pixel_values"].numpy()
        assert pv.dtype == np.float32
        entries.append(
            {
                "id": cid,
                "source": source,
                "model_type": model_type,
                "class": type(proc).__name__,
                "size": size,
                "input_sha256": sha256(arr),
                "pixel_values_shape": list(pv.shape),
                "pixel_values_sha256": sha256(pv),
                "samples": [float(pv[r, c]) for r, c in SAMPLES],
                "image_grid_thw": out["image_grid_thw"].numpy().tolist(),
            }
        )
        print(f"{cid}: {arr.shape} -> {entries[-1]['image_grid_thw']}")
    return entries


def rope_goldens() -> list[dict[str, Any]]:
    from PIL import Image

    rows = []
    for cid, model_type, text, sources in ROPE_CASES:
        proc = processor(model_type)
        images = [Image.fromarray(make_input(s)) for s in sources] or None
        got = proc(text=[text], images=images, return_tensors="np")
        prompt_ids = proc.tokenizer(text)["input_ids"]
        if images is None:
            # the model uses 1-D positions without media: get_rope_index is not called
            got["mm_token_type_ids"] = np.zeros_like(got["input_ids"])
        positions, delta = rope(model_type, got) if images else (None, None)
        rows.append(
            {
                "id": cid,
                "model_type": model_type,
                "processor": type(proc).__name__,
                "model": model_class(model_type).__name__,
                "prompt": text,
                "prompt_ids": prompt_ids,
                "images": sources,
                "input_ids": np.asarray(got["input_ids"])[0].tolist(),
                "mm_token_type_ids": np.asarray(got["mm_token_type_ids"])[0].tolist(),
                "image_grid_thw": np.asarray(got["image_grid_thw"]).tolist() if images else [],
                "positions": positions,
                "delta": delta,
            }
        )
        print(f"{cid}: {len(rows[-1]['input_ids'])} ids, delta {delta}")
    return rows


def meta(reference: str) -> dict[str, Any]:
    import PIL
    import tokenizers
    import torch
    import torchvision
    import transformers

    return {
        "generator": "plugins/glm4v/tests/gen_goldens.py",
        "reference": reference,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": np.__version__,
        "PIL": PIL.__version__,
        "machine": platform.machine(),
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def write(path: Path, doc: dict[str, Any]) -> None:
    """Indented at the top, one line per case (positions are long)."""
    compact = functools.partial(json.dumps, separators=(",", ":"))
    head = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items() if k != "cases"]
    cases = ",\n".join(f"  {compact(c)}" for c in doc["cases"])
    path.write_text("{\n" + ",\n".join(head) + ',\n "cases": [\n' + cases + "\n ]\n}\n")
    json.loads(path.read_text())
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def main() -> None:
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    reference = (
        "transformers Glm4vImageProcessor / Glm46VImageProcessor (torchvision backend), CPU, "
        "size per case"
    )
    write(
        FIXTURES / "aten_goldens.json",
        {**meta(reference), "sample_points": SAMPLES, "cases": aten_goldens()},
    )
    reference = (
        "Glm4vProcessor / Glm46VProcessor (torchvision image processor, size "
        f"{SHIPPED}, local tokenizer) and get_rope_index of Glm4vModel / Glm4vMoeModel / "
        "Glm46VModel (vision_config.spatial_merge_size 2)"
    )
    write(FIXTURES / "rope_goldens.json", {**meta(reference), "cases": rope_goldens()})


if __name__ == "__main__":
    main()
