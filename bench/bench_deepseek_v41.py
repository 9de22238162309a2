"""DeepSeek-V4.1 family vs its references, interleaved in one process, one thread on every
side; prints medians and ratios.

For a 640x480, a 1080p and a 12 MP JPEG (photo mosaics):
  1. bytes -> patches end to end, ``threads`` 1, vs SGLang's reference PIL path
     (``Image.open(...).load()`` then ``patchify_image``, which needs torch; torch threads 1)
     (target >= 5x), with Pillow's decode-only time beside it;
  2. from the same decoded array, the family's ``resize_patchify`` vs SGLang's compiled
     extension's ``dsv41.resize_patchify`` (``SGL_MM_RS_THREADS=1``) given what
     ``prepare_image`` plans (target >= 3x); the extension does not decode.

Each pair is first checked to give the same bits (ours against the reference on Pillow 13;
against the extension in its Pillow 12 pass order, and how much Pillow 13's order differs).

Run: .venv/bin/python bench/bench_deepseek_v41.py [--quick] (after `make build sglang-ext`).
Section 1 needs torch: run it where torch is, with the project's packages importable, e.g.
``PYTHONPATH=.venv/lib/python3.11/site-packages /path/to/torchenv/bin/python bench/...``
(the torch venv's own packages first); without torch it says so and skips section 1."""

from __future__ import annotations

import io
import os
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

os.environ["SGL_MM_RS_THREADS"] = "1"
warnings.simplefilter("ignore")

import numpy as np  # noqa: E402
import sglang_mm_deepseek_v41 as dsv41  # noqa: E402
from _images import mosaic  # noqa: E402
from _timing import interleaved  # noqa: E402
from PIL import Image  # noqa: E402

from sglang_mm_core import MmInput, pipeline_from_spec  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXT_DIR = ROOT / "dist" / "sglang-ext"
QUICK = "--quick" in sys.argv
ARGS = SimpleNamespace(
    vision_patch_size=14,
    vision_downsample_ratio=3,
    vision_max_n_token=1024,
    vision_min_pixels=295936,
    vision_max_wh_ratio=None,
)


def load_module(name: str, path: Path) -> object:
    import importlib.machinery
    import importlib.util

    loader = (
        importlib.machinery.ExtensionFileLoader(name, str(path))
        if path.suffix == ".so"
        else importlib.machinery.SourceFileLoader(name, str(path))
    )
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def reference() -> object | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return load_module("sglang_dsv41_reference", EXT_DIR / "deepseek_v41_image_processing.py")


def extension() -> object | None:
    path = EXT_DIR / "_multimodal.cpython-311-x86_64-linux-gnu.so"
    if not path.is_file():
        return None
    return load_module("sglang.srt.rust_extensions._multimodal", path)


def sglang_load(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


def run(name: str, data: bytes, ref: object | None, ext: object | None, repeat: int) -> None:
    spec = {"family": "deepseek_v41", "params": {}, "threads": 1}
    with pipeline_from_spec(spec) as pipe:
        req = MmInput(input_ids=[129264], images=[data])
        ours = pipe.process(req).items[0].feature.array
        line = [f"{name}:"]
        if ref is not None:
            patches, *_ = ref.patchify_image(sglang_load(data), ARGS)  # type: ignore[attr-defined]
            want = patches.contiguous().view(__import__("torch").int16).numpy().view(np.uint16)
            assert np.array_equal(ours, want), "not bit-exact with the reference"
            t = interleaved(
                {
                    "ref": lambda: ref.patchify_image(sglang_load(data), ARGS),  # type: ignore[attr-defined]
                    "decode": lambda: sglang_load(data).convert("RGB"),
                    "ours": lambda: pipe.process(req),
                },
                repeat,
            )
            line.append(
                f"reference PIL path {t['ref']:7.1f} ms, Pillow decode {t['decode']:6.1f} ms, "
                f"ours {t['ours']:6.1f} ms -> {t['ref'] / t['ours']:4.1f}x the reference "
                f"(goal >= 5x), {t['ours'] / t['decode']:4.2f}x the decode; bit-exact"
            )
        else:
            line.append("reference PIL path skipped (torch is not installed here)")
        print(" ".join(line))
    if ext is None:
        print(f"{name}: extension skipped (run `make sglang-ext`)")
        return
    from sglang_mm_deepseek_v41.grid import plan_grid

    image = sglang_load(data).convert("RGB")
    arr = np.ascontiguousarray(np.asarray(image))
    g = plan_grid(image.width, image.height, dsv41.DeepseekV41Params())
    call = ((g.height, g.width), (g.content[1], g.content[0]), (g.at[1], g.at[0]), 14)
    theirs = ext.dsv41.resize_patchify(arr, *call)  # type: ignore[attr-defined]
    same12 = dsv41.resize_patchify(arr, *call, pil_pass_order="pillow12")
    assert np.array_equal(theirs, same12), "not bit-exact with the extension (Pillow 12 order)"
    share = float(np.mean(theirs != dsv41.resize_patchify(arr, *call)))
    t = interleaved(
        {
            "ext": lambda: ext.dsv41.resize_patchify(arr, *call),  # type: ignore[attr-defined]
            "ours": lambda: dsv41.resize_patchify(arr, *call, threads=1),
        },
        repeat,
    )
    print(
        f"{name}: from the decoded array: extension {t['ext']:6.1f} ms, ours {t['ours']:6.1f} ms"
        f" -> {t['ext'] / t['ours']:4.1f}x (goal >= 3x); bit-exact in Pillow 12's order, "
        f"{share:.1%} of values differ in Pillow 13's"
    )


def main() -> None:
    ref, ext = reference(), extension()
    sizes = {"640x480": (640, 480, 1, 1), "1080p": (1920, 1080, 2, 2), "12MP": (4032, 3024, 4, 2)}
    for name, (w, h, cols, rows) in sizes.items():
        data = mosaic((w, h), cols, rows)
        repeat = 3 if QUICK else (21 if w < 1000 else 11 if w < 3000 else 7)
        run(name, data, ref, ext, repeat)


if __name__ == "__main__":
    main()
