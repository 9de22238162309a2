"""Generate the golden fixtures that the CI replays without torch (run it where torch is):

    python plugins/internvl/tests/gen_goldens.py

- ``fixtures/aten_goldens.npz`` + ``.json``: HuggingFace's default torchvision backend
  (``GotOcr2ImageProcessor`` with ``crop_to_patches``, as ``InternVLProcessor`` calls it) on
  the CPU, over the photo corpus and the family's edge cases (ties both ways, min/max patches,
  tiny and extreme sizes, small tiles).
- ``fixtures/model_card_goldens.npz`` + ``.json``: the model card's ``load_image`` pipeline run
  with the real torchvision transforms (``T.Resize`` bicubic, ``T.ToTensor``, ``T.Normalize``)
  on ``dynamic_preprocess``'s Pillow crops.

Small outputs are stored whole; larger ones as the SHA-256 of all their float32 bytes plus
sampled rows (first, middle and last row of each channel of the first and last tile). The
versions used, and every input's SHA-256, are recorded in the JSON files."""

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
from _internvl_refs import MEAN, PHOTOS, STD, gradient, noise, photo

FIXTURES = Path(__file__).parent / "fixtures"
FULL_LIMIT = 128 * 1024  # bytes of pixel_values stored whole
MAX_FIXTURE_BYTES = 4 * 1024 * 1024

PARAMS: dict[str, dict[str, Any]] = {
    "default": {"tile_size": 448, "min_patches": 1, "max_patches": 12},
    "max4": {"tile_size": 448, "min_patches": 1, "max_patches": 4},
    "max1": {"tile_size": 448, "min_patches": 1, "max_patches": 1},
    "min3": {"tile_size": 448, "min_patches": 3, "max_patches": 12},
    "tile28": {"tile_size": 28, "min_patches": 1, "max_patches": 12},
    "tile56_min2_max6": {"tile_size": 56, "min_patches": 2, "max_patches": 6},
}


def all_levels(width: int, height: int) -> np.ndarray:
    """Every sample value 0..255 in every channel (for the normalize table)."""
    i = np.arange(width * height).reshape(height, width)
    return np.dstack([(i + 85 * c) % 256 for c in range(3)]).astype(np.uint8)


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(cid: str, params: str, source: dict[str, Any], arr: np.ndarray) -> None:
        out.append({"id": cid, "params": params, "source": source, "array": arr})

    for name in PHOTOS:
        add(f"photo-{name}", "default", {"photo": name}, np.asarray(photo(name)))
    add("levels-448", "default", {"stored": True}, all_levels(448, 448))
    add("levels-28", "tile28", {"stored": True}, all_levels(28, 28))
    for w, h, params in [
        (1, 1, "default"),
        (300, 200, "default"),
        (633, 633, "default"),
        (634, 634, "default"),
        (1267, 633, "default"),
        (1268, 634, "default"),
        (633, 1267, "default"),
        (634, 1268, "default"),
        (1, 2000, "default"),
        (2000, 1, "default"),
        (546, 364, "max4"),
        (549, 366, "max4"),
        (384, 512, "max4"),
        (390, 520, "max4"),
        (640, 480, "max1"),
        (640, 480, "min3"),
    ]:
        seed = w * 7 + h
        add(
            f"noise-{w}x{h}-{params}",
            params,
            {"noise": [w, h, seed]},
            np.asarray(noise(w, h, seed)),
        )
    for w, h in [(1, 1), (5, 3), (13, 80), (80, 13), (100, 61), (29, 29), (300, 7)]:
        add(
            f"tile28-noise-{w}x{h}",
            "tile28",
            {"noise": [w, h, w + h]},
            np.asarray(noise(w, h, w + h)),
        )
        add(f"tile28-gradient-{w}x{h}", "tile28", {"gradient": [w, h]}, np.asarray(gradient(w, h)))
    for w, h in [(170, 97), (41, 250), (56, 56)]:
        add(
            f"tile56-noise-{w}x{h}",
            "tile56_min2_max6",
            {"noise": [w, h, 5]},
            np.asarray(noise(w, h, 5)),
        )
    return out


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def samples(pv: np.ndarray) -> tuple[list[int], list[int], np.ndarray]:
    """Tiles (first, last) and rows (first, middle, last) sampled from ``[tiles, 3, T, T]``."""
    tiles = sorted({0, pv.shape[0] - 1})
    t = pv.shape[2]
    rows = sorted({0, t // 2, t - 1})
    return tiles, rows, np.ascontiguousarray(pv[tiles][:, :, rows, :])


def versions() -> dict[str, str]:
    import PIL
    import torch
    import torchvision
    import transformers

    return {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
        "pillow": PIL.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


def store(entry: dict[str, Any], arrays: dict[str, np.ndarray], key: str, pv: np.ndarray) -> None:
    entry["pixel_values_shape"] = list(pv.shape)
    entry["pixel_values_sha256"] = sha256(pv)
    if pv.nbytes <= FULL_LIMIT:
        arrays[f"{key}/pixel_values"] = pv
        entry["stored"] = "full"
    else:
        tiles, rows, sampled = samples(pv)
        arrays[f"{key}/samples"] = sampled
        entry.update(stored="sha256+samples", sample_tiles=tiles, sample_rows=rows)


def gen_aten() -> None:
    from PIL import Image
    from transformers import GotOcr2ImageProcessor

    arrays: dict[str, np.ndarray] = {}
    meta_cases = []
    for case in cases():
        arr = case["array"]
        p = PARAMS[case["params"]]
        proc = GotOcr2ImageProcessor(
            size={"height": p["tile_size"], "width": p["tile_size"]},
            crop_to_patches=True,
            min_patches=p["min_patches"],
            max_patches=p["max_patches"],
            image_mean=list(MEAN),
            image_std=list(STD),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = proc(images=[Image.fromarray(arr)], return_tensors="pt")
        pv = out["pixel_values"].numpy()
        assert pv.dtype == np.float32, pv.dtype
        key = case["id"]
        entry: dict[str, Any] = {
            "id": key,
            "params": case["params"],
            "source": case["source"],
            "input_shape": list(arr.shape),
            "input_sha256": sha256(arr),
            "num_patches": [int(x) for x in out["num_patches"]],
        }
        if case["source"].get("stored"):
            arrays[f"{key}/input"] = arr
        store(entry, arrays, key, pv)
        meta_cases.append(entry)
        print(f"{key}: {tuple(arr.shape)} -> {pv.shape} ({entry['stored']})")
    write(
        "aten_goldens",
        arrays,
        {
            "reference": "transformers.GotOcr2ImageProcessor "
            "(torchvision backend, CPU, crop_to_patches)",
            "params": PARAMS,
            "cases": meta_cases,
        },
    )


# --- the model card's load_image ----------------------------------------------------------------


def card_closest_ratio(aspect: float, ratios: list, width: int, height: int, size: int) -> tuple:
    best_diff, best = float("inf"), (1, 1)
    area = width * height
    for ratio in ratios:
        diff = abs(aspect - ratio[0] / ratio[1])
        if diff < best_diff:
            best_diff, best = diff, ratio
        elif diff == best_diff and area > 0.5 * size * size * ratio[0] * ratio[1]:
            best = ratio
    return best


def card_dynamic_preprocess(image: Any, min_num: int, max_num: int, size: int) -> list:
    width, height = image.size
    ratios = sorted(
        {
            (i, j)
            for n in range(min_num, max_num + 1)
            for i in range(1, n + 1)
            for j in range(1, n + 1)
            if min_num <= i * j <= max_num
        },
        key=lambda x: x[0] * x[1],
    )
    cols, rows = card_closest_ratio(width / height, ratios, width, height, size)
    resized = image.resize((size * cols, size * rows))
    tiles = []
    for i in range(cols * rows):
        box = ((i % cols) * size, (i // cols) * size, (i % cols + 1) * size, (i // cols + 1) * size)
        tiles.append(resized.crop(box))
    if len(tiles) != 1:
        tiles.append(image.resize((size, size)))
    return tiles


def card_load_image(image: Any, min_num: int, max_num: int, size: int = 448) -> np.ndarray:
    import torch
    import torchvision.transforms as T
    from torchvision.transforms.functional import InterpolationMode

    transform = T.Compose(
        [
            T.Lambda(lambda img: img.convert("RGB") if img.mode != "RGB" else img),
            T.Resize((size, size), interpolation=InterpolationMode.BICUBIC),
            T.ToTensor(),
            T.Normalize(mean=MEAN, std=STD),
        ]
    )
    tiles = card_dynamic_preprocess(image, min_num, max_num, size)
    return torch.stack([transform(t) for t in tiles]).numpy()


def gen_model_card() -> None:
    from PIL import Image

    arrays: dict[str, np.ndarray] = {}
    meta_cases = []
    sources: list[tuple[str, dict[str, Any], np.ndarray, int, int]] = [
        (f"photo-{n}", {"photo": n}, np.asarray(photo(n)), 1, 12) for n in PHOTOS[:4]
    ]
    sources += [
        ("levels-448", {"stored": True}, all_levels(448, 448), 1, 12),
        ("noise-634x634", {"noise": [634, 634, 1]}, np.asarray(noise(634, 634, 1)), 1, 12),
        ("noise-1x2000", {"noise": [1, 2000, 2]}, np.asarray(noise(1, 2000, 2)), 1, 12),
        ("noise-640x480-max6", {"noise": [640, 480, 3]}, np.asarray(noise(640, 480, 3)), 1, 6),
        ("noise-640x480-min3", {"noise": [640, 480, 3]}, np.asarray(noise(640, 480, 3)), 3, 12),
    ]
    for key, source, arr, lo, hi in sources:
        pv = card_load_image(Image.fromarray(arr), lo, hi)
        entry: dict[str, Any] = {
            "id": key,
            "source": source,
            "min_patches": lo,
            "max_patches": hi,
            "input_shape": list(arr.shape),
            "input_sha256": sha256(arr),
        }
        if source.get("stored"):
            arrays[f"{key}/input"] = arr
        store(entry, arrays, key, pv)
        meta_cases.append(entry)
        print(f"model card {key}: {tuple(arr.shape)} -> {pv.shape}")
    write(
        "model_card_goldens",
        arrays,
        {
            "reference": "InternVL model card load_image "
            "(dynamic_preprocess + torchvision T.Resize, T.ToTensor, T.Normalize)",
            "cases": meta_cases,
        },
    )


def write(name: str, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    FIXTURES.mkdir(exist_ok=True)
    np.savez_compressed(FIXTURES / f"{name}.npz", **arrays)
    doc = {"generator": "plugins/internvl/tests/gen_goldens.py", **versions(), **meta}
    (FIXTURES / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    gen_aten()
    gen_model_card()
    total = sum(p.stat().st_size for p in FIXTURES.iterdir())
    print(f"fixtures: {total / 1e6:.2f} MB")
    assert total < MAX_FIXTURE_BYTES, "fixtures must stay small"


if __name__ == "__main__":
    main()
