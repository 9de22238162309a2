"""SGLang's compiled extension, the reference of these tests, loaded from the file `make
sglang-ext` takes out of the sglang wheel (never ``import sglang``: only the one .so is there),
and the images both sides are given."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import io
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import numpy.typing as npt
from PIL import Image

ROOT = Path(__file__).resolve().parents[3]
EXT_NAME = "sglang.srt.rust_extensions._multimodal"
EXT_PATH = ROOT / "dist" / "sglang-ext" / "_multimodal.cpython-311-x86_64-linux-gnu.so"
# The references of the plugins' own tests: the numpy + Pillow one of the inkling spec,
# HuggingFace's Qwen2-VL processor and SGLang's DeepSeek-V4.1 module (plugins/*/tests).
# The core's local HTTP test server (tests/http_server.py).
sys.path[:0] = [
    str(ROOT / "plugins" / "deepseek_v41" / "tests"),
    str(ROOT / "plugins" / "inkling" / "tests"),
    str(ROOT / "plugins" / "qwen_vl" / "tests"),
    str(ROOT / "tests"),
]


def load_extension() -> ModuleType:
    """The extension module under its real name, from its file alone."""
    if not EXT_PATH.is_file():
        raise RuntimeError(f"{EXT_PATH} is missing: run `make sglang-ext` (make py-test does)")
    loader = importlib.machinery.ExtensionFileLoader(EXT_NAME, str(EXT_PATH))
    spec = importlib.util.spec_from_file_location(EXT_NAME, EXT_PATH, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def encode(arr: npt.NDArray[np.uint8], fmt: str, **kw: object) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, **kw)
    return buf.getvalue()


def photo(h: int, w: int, seed: int = 0) -> npt.NDArray[np.uint8]:
    """A photograph resized to ``h x w`` (real detail, so resamplers and codecs are exercised
    as on real inputs), with a little noise so no two sizes share pixels."""
    from skimage import data as skdata

    base = Image.fromarray(skdata.astronaut() if seed % 2 == 0 else skdata.coffee())
    arr = np.asarray(base.resize((w, h), Image.Resampling.BICUBIC)).astype(np.int16)
    noise = np.random.default_rng(seed).integers(-3, 4, arr.shape)
    return np.clip(arr + noise, 0, 255).astype(np.uint8)


def lossless(arr: npt.NDArray[np.uint8]) -> dict[str, bytes]:
    """The image as PNG, BMP and lossless WebP."""
    return {
        "png": encode(arr, "PNG"),
        "bmp": encode(arr, "BMP"),
        "webp": encode(arr, "WEBP", lossless=True),
    }


def pillow_rgb(data: bytes) -> npt.NDArray[np.uint8]:
    """What the extension's decode stands for: Pillow's ``open(...).convert("RGB")``."""
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB"))
