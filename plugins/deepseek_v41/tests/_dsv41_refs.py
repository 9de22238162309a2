"""The references of the DeepSeek-V4.1 tests.

- `reference()`: SGLang 0.5.23's own ``deepseek_v41_image_processing`` module, the file `make
  sglang-ext` takes out of the sglang wheel (pinned by its sha256). It imports torch at the
  top; where torch is not installed (CI) it is loaded over an import placeholder, so that its
  pure geometry functions (``plan_image_grid``, ``prepare_image``, ``num_image_tokens``, ...)
  are the real ones, while calling anything that needs torch fails loudly.
- `patchify_numpy`: the reference's ``patchify_image`` with its torch steps written in numpy
  (``x / 255`` and ``(x - 0.5) / 0.5`` in float32, then round to nearest even to bfloat16),
  on the reference's own plan and Pillow's own ``ImageOps.pad`` / ``resize``; the goldens
  (gen_goldens.py) tie it to the real function run with torch.
- `expand_prompt`: the id expansion of SGLang's ``DeepseekV41ImageProcessor``."""

from __future__ import annotations

import functools
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageOps

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "dist" / "sglang-ext" / "deepseek_v41_image_processing.py"


class _NoTorch(types.ModuleType):
    """Stands in for torch while the reference module is imported (its annotations name
    ``torch.Tensor``); any other use raises."""

    Tensor = type("Tensor", (), {})

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"torch.{name}: torch is not installed here (reference geometry only)")


@functools.cache
def reference() -> types.ModuleType:
    if not REFERENCE.is_file():
        raise RuntimeError(f"{REFERENCE} is missing: run `make sglang-ext` (make py-test does)")
    try:
        import torch  # noqa: F401
    except ImportError:
        stand_in = _NoTorch("torch")
        nn = types.ModuleType("torch.nn")
        functional = types.ModuleType("torch.nn.functional")
        nn.functional = functional  # type: ignore[attr-defined]
        stand_in.__dict__["nn"] = nn
        saved = {k: sys.modules.get(k) for k in ("torch", "torch.nn", "torch.nn.functional")}
        sys.modules.update({"torch": stand_in, "torch.nn": nn, "torch.nn.functional": functional})
        try:
            return _load()
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
    return _load()


def _load() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("sglang_dsv41_reference", REFERENCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def args(**flat: Any) -> types.SimpleNamespace:
    """The model config the reference reads (SGLang's flat names)."""
    return types.SimpleNamespace(**flat)


def bf16_bits(x: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    """float32 to bfloat16 bits, to nearest with ties to even (no NaN arises here)."""
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def patchify_numpy(image: Image.Image, a: types.SimpleNamespace) -> tuple[Any, ...]:
    """``patchify_image(image, a)`` with numpy for torch: ``(bits [n, 3, p, p] uint16, n_vit_h,
    n_vit_w, n_llm_h, n_llm_w)``."""
    ref = reference()
    p = a.vision_patch_size
    image = image.convert("RGB")
    lh, lw, bh, bw = ref.plan_image_grid(image.width, image.height, a)
    nh, nw = bh // p, bw // p
    ratio = a.vision_max_wh_ratio
    if ratio is not None and image.width >= ratio * image.height:
        image = image.resize((bw, bh))
    else:
        image = ImageOps.pad(image, (bw, bh), color=(127, 127, 127))
    x = np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255
    x = (x - np.float32(0.5)) / np.float32(0.5)
    assert x.dtype == np.float32
    bits = bf16_bits(np.ascontiguousarray(x))
    patches = bits.reshape(3, nh, p, nw, p).transpose(1, 3, 0, 2, 4).reshape(nh * nw, 3, p, p)
    return np.ascontiguousarray(patches), nh, nw, lh, lw


def token_types(n_llm_h: int, n_llm_w: int) -> list[int]:
    """``image_token_types`` as the reference's module docstring states the layout."""
    start, image, newline, end = range(4)
    return [start, *([image] * n_llm_w + [newline]) * n_llm_h, end]


def expand_prompt(
    ids: list[int], image_token_id: int, grids: list[tuple[int, int]]
) -> tuple[list[int], list[tuple[int, int]]]:
    """``DeepseekV41ImageProcessor.process_mm_data_async``'s expansion: each placeholder
    becomes ``num_image_tokens(n_llm_h, n_llm_w)`` copies of itself, offsets inclusive."""
    ref = reference()
    if ids.count(image_token_id) != len(grids):
        raise ValueError("Image placeholders and images must match")
    it = iter(grids)
    tokens: list[int] = []
    offsets = []
    for t in ids:
        if t != image_token_id:
            tokens.append(t)
            continue
        lh, lw = next(it)
        count = ref.num_image_tokens(lh, lw)
        offsets.append((len(tokens), len(tokens) + count - 1))
        tokens.extend([image_token_id] * count)
    return tokens, offsets
