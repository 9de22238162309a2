"""Generate the golden fixtures that the CI replays without torch (run it where torch is):

    python plugins/qwen_vl/tests/gen_goldens.py

- ``fixtures/aten_goldens.npz`` + ``.json``: HuggingFace's default torchvision backend
  (``Qwen2VLImageProcessor``, v5) on the CPU, over the photo corpus and the generated edge sizes
  for Qwen2 and Qwen3 parameters. Small outputs are stored whole; larger ones as the SHA-256 of
  their float32 bytes plus a few sample rows (fixtures must stay small).
- ``fixtures/rope_goldens.json``: ``get_rope_index`` of the Qwen2-VL, Qwen2.5-VL, Qwen3-VL and
  Qwen3.5 models on expanded prompts, with the unexpanded prompts and grids they came from.

The versions used are recorded in the JSON files and checked by the replaying tests' inputs
(every input image's SHA-256 is stored too, so a changed corpus is reported as such)."""

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
from _qwen_refs import PHOTOS, QWEN2, QWEN3, gradient, noise, photo

FIXTURES = Path(__file__).parent / "fixtures"
FULL_LIMIT = 256 * 1024  # bytes of pixel_values stored whole
MAX_FIXTURE_BYTES = 5 * 1024 * 1024

SMALL_MAX = {**QWEN2, "max_pixels": 28 * 28 * 100}
SMALL_Q3 = {**QWEN3, "min_pixels": 32 * 32 * 4, "max_pixels": 32 * 32 * 64}
PARAMS = {"qwen2": QWEN2, "qwen3": QWEN3, "qwen2_small_max": SMALL_MAX, "qwen3_small": SMALL_Q3}


def all_levels(width: int, height: int) -> np.ndarray:
    """Every sample value 0..255 in every channel (for the normalize table)."""
    i = np.arange(width * height).reshape(height, width)
    return np.dstack([(i + 85 * c) % 256 for c in range(3)]).astype(np.uint8)


def cases() -> list[dict[str, Any]]:
    """``{id, params, source, array}`` for every golden."""
    out: list[dict[str, Any]] = []

    def add(cid: str, params: str, source: dict[str, Any], arr: np.ndarray) -> None:
        out.append({"id": cid, "params": params, "source": source, "array": arr})

    for which in ("qwen2", "qwen3"):
        for name in PHOTOS:
            add(f"{which}-{name}", which, {"photo": name}, np.asarray(photo(name)))
    add("qwen2-levels", "qwen2", {"stored": True}, all_levels(56, 56))
    add("qwen3-levels", "qwen3_small", {"stored": True}, all_levels(64, 64))
    for w, h in [
        (56, 56),
        (57, 83),
        (42, 70),
        (14, 98),
        (20, 20),
        (13, 10),
        (1, 1),
        (2, 400),
        (400, 2),
        (700, 70),
        (30, 1000),
        (641, 479),
    ]:
        add(
            f"qwen2-noise-{w}x{h}",
            "qwen2",
            {"noise": [w, h, w * 7 + h]},
            np.asarray(noise(w, h, seed=w * 7 + h)),
        )
        add(f"qwen2-gradient-{w}x{h}", "qwen2", {"gradient": [w, h]}, np.asarray(gradient(w, h)))
    for w, h in [(256, 256), (48, 80), (16, 16), (300, 7), (7, 1400), (33, 17)]:
        add(
            f"qwen3-noise-{w}x{h}",
            "qwen3",
            {"noise": [w, h, w + h]},
            np.asarray(noise(w, h, seed=w + h)),
        )
    for w, h in [(300, 1500), (1500, 300), (600, 500), (1000, 5), (333, 333)]:
        add(
            f"small-noise-{w}x{h}",
            "qwen2_small_max",
            {"noise": [w, h, 3]},
            np.asarray(noise(w, h, seed=3)),
        )
        add(
            f"small-astronaut-{w}x{h}",
            "qwen2_small_max",
            {"photo_resized": ["astronaut.png", w, h]},
            np.asarray(photo("astronaut.png").resize((w, h))),
        )
    add(
        "qwen3-small-coffee",
        "qwen3_small",
        {"photo": "coffee.png"},
        np.asarray(photo("coffee.png")),
    )
    return out


def torchvision_processor(params: dict[str, Any]) -> Any:
    from transformers import Qwen2VLImageProcessor

    return Qwen2VLImageProcessor(
        patch_size=params["patch_size"],
        merge_size=params["merge_size"],
        temporal_patch_size=params["temporal_patch_size"],
        image_mean=list(params["image_mean"]),
        image_std=list(params["image_std"]),
        size={"shortest_edge": params["min_pixels"], "longest_edge": params["max_pixels"]},
    )


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def sample_rows(n: int) -> list[int]:
    return sorted({0, n // 3, (2 * n) // 3, n - 1})


def gen_aten() -> None:
    from PIL import Image

    arrays: dict[str, np.ndarray] = {}
    meta_cases = []
    for case in cases():
        arr = case["array"]
        params = PARAMS[case["params"]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = torchvision_processor(params)(images=[Image.fromarray(arr)], return_tensors="pt")
        pv = out["pixel_values"].numpy()
        grid = out["image_grid_thw"].numpy()
        assert pv.dtype == np.float32, pv.dtype
        entry: dict[str, Any] = {
            "id": case["id"],
            "params": case["params"],
            "source": case["source"],
            "input_shape": list(arr.shape),
            "input_sha256": sha256(arr),
            "grid_thw": grid.tolist(),
            "pixel_values_shape": list(pv.shape),
            "pixel_values_sha256": sha256(pv),
        }
        key = case["id"]
        if case["source"].get("stored"):
            arrays[f"{key}/input"] = arr
        if pv.nbytes <= FULL_LIMIT:
            arrays[f"{key}/pixel_values"] = pv
            entry["stored"] = "full"
        else:
            rows = sample_rows(pv.shape[0])
            arrays[f"{key}/rows"] = pv[rows]
            entry["stored"] = "sha256+rows"
            entry["rows"] = rows
        meta_cases.append(entry)
        print(f"{key}: {tuple(arr.shape)} -> grid {grid.tolist()} ({entry['stored']})")
    FIXTURES.mkdir(exist_ok=True)
    np.savez_compressed(FIXTURES / "aten_goldens.npz", **arrays)
    meta = {
        "generator": "plugins/qwen_vl/tests/gen_goldens.py",
        **versions(),
        "reference": "transformers.Qwen2VLImageProcessor (torchvision backend, CPU)",
        "params": {
            k: {**v, "image_mean": list(v["image_mean"]), "image_std": list(v["image_std"])}
            for k, v in PARAMS.items()
        },
        "cases": meta_cases,
    }
    (FIXTURES / "aten_goldens.json").write_text(json.dumps(meta, indent=1) + "\n")


# --- MRoPE ------------------------------------------------------------------------------------

IMG, VS, VE = 151655, 151652, 151653


def rope_cases() -> list[dict[str, Any]]:
    """Unexpanded prompts (one placeholder per image, inside vision markers) and unmerged grids."""
    rng = np.random.default_rng(5)

    def text(n: int) -> list[int]:
        return [int(x) for x in rng.integers(100, 150000, size=n)]

    def prompt(parts: list[Any]) -> list[int]:
        ids: list[int] = []
        for p in parts:
            ids += [VS, IMG, VE] if p == "img" else text(p)
        return ids

    out = [
        {"id": "spec-one-image", "ids": [1, 2, 3, VS, IMG, VE, 4, 5], "grids": [[1, 4, 4]]},
        {
            "id": "spec-two-images",
            "ids": [1, VS, IMG, VE, VS, IMG, VE, 2],
            "grids": [[1, 4, 4], [1, 4, 6]],
        },
        {
            "id": "image-first-and-last",
            "ids": prompt(["img", 5, "img"]),
            "grids": [[1, 6, 4], [1, 2, 8]],
        },
        {
            "id": "chat-three-images",
            "ids": prompt([20, "img", 3, "img", 1, "img", 300]),
            "grids": [[1, 34, 46], [1, 36, 36], [1, 2, 400]],
        },
        {
            "id": "tall-and-wide",
            "ids": prompt([7, "img", "img", 9]),
            "grids": [[1, 400, 2], [1, 2, 400]],
        },
    ]
    grids = [[1, 2 * int(a), 2 * int(b)] for a, b in rng.integers(1, 40, size=(16, 2))]
    parts: list[Any] = []
    for _ in grids:
        parts += [int(rng.integers(1, 200)), "img"]
    out.append({"id": "sixteen-images", "ids": prompt([*parts, 50]), "grids": grids})
    return out


def expand(ids: list[int], grids: list[list[int]], merge: int = 2) -> list[int]:
    """What HF's processor does to the prompt: each placeholder -> t*h*w/merge^2 copies."""
    it = iter(grids)
    out: list[int] = []
    for tok in ids:
        if tok == IMG:
            t, h, w = next(it)
            out += [IMG] * (t * h * w // merge**2)
        else:
            out.append(tok)
    return out


def hf_rope(model_cls: Any, ids: list[int], grids: list[list[int]]) -> tuple[list, int]:
    import torch

    # tokens_per_second only scales video time steps (Qwen2.5-VL reads it unconditionally).
    vision = types.SimpleNamespace(spatial_merge_size=2, tokens_per_second=2)
    stub = types.SimpleNamespace(config=types.SimpleNamespace(vision_config=vision))
    stub.get_vision_position_ids = functools.partial(model_cls.get_vision_position_ids, stub)
    input_ids = torch.tensor([ids], dtype=torch.long)
    token_type = (input_ids == IMG).to(torch.int32)
    pos, delta = model_cls.get_rope_index(
        stub,
        input_ids,
        mm_token_type_ids=token_type,
        image_grid_thw=torch.tensor(grids, dtype=torch.long),
    )
    return pos[:, 0, :].tolist(), int(delta.reshape(-1)[0])


def gen_rope() -> None:
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5Model
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLModel

    models = {
        "Qwen2VLModel": Qwen2VLModel,
        "Qwen2_5_VLModel": Qwen2_5_VLModel,
        "Qwen3VLModel": Qwen3VLModel,
        "Qwen3_5Model": Qwen3_5Model,
    }
    out = []
    for case in rope_cases():
        expanded = expand(case["ids"], case["grids"])
        per_model = {name: hf_rope(cls, expanded, case["grids"]) for name, cls in models.items()}
        first = next(iter(per_model.values()))
        assert all(v == first for v in per_model.values()), case["id"]
        out.append(
            {
                **case,
                "expanded": expanded,
                "positions": first[0],
                "delta": first[1],
                "models": sorted(models),
            }
        )
        print(f"rope {case['id']}: {len(expanded)} tokens, delta {first[1]}")
    meta = {
        "generator": "plugins/qwen_vl/tests/gen_goldens.py",
        **versions(),
        "reference": "get_rope_index of " + ", ".join(sorted(models)),
        "image_token_id": IMG,
        "vision_start_token_id": VS,
        "vision_end_token_id": VE,
        "cases": out,
    }
    (FIXTURES / "rope_goldens.json").write_text(json.dumps(meta, separators=(",", ":")) + "\n")


def versions() -> dict[str, str]:
    import PIL
    import torch
    import torchvision
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
        "pillow": PIL.__version__,
    }


def main() -> None:
    gen_aten()
    gen_rope()
    total = sum(p.stat().st_size for p in FIXTURES.iterdir())
    print(f"fixtures: {total / 1e6:.2f} MB")
    assert total < MAX_FIXTURE_BYTES, "fixtures must stay small"


if __name__ == "__main__":
    main()
