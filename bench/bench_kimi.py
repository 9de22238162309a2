"""Kimi family vs its references, interleaved in one process, one thread on both sides; prints
median times and ratios, bytes -> pixel_values (with ``image_grid_thw``) end to end for a 1080p
and a 12-megapixel JPEG:

  1. threads=0, ``resample: "pil"``, vs the checkpoint's own processor (``KimiK25VisionProcessor``
     of moonshotai/Kimi-K2.5: Pillow decode, ``convert("RGB")``, BICUBIC resize, ``np.pad``,
     numpy normalize, patchify; restated in plugins/kimi/tests/_kimi_refs.py), with Pillow's
     decode-only time (target >= 5x, or <= 1.5x Pillow's decode-only time);
  2. ``resample: "aten_u8"`` vs transformers' ``Kimi_K25ImageProcessor`` (torchvision, CPU,
     torch on one thread) when torch is importable (target >= 2x);
  3. ``generation: "k3"`` (moonshotai/Kimi-K3's settings) vs Kimi K3's checkpoint processor
     (restated in _kimi_refs.py as ``k3_checkpoint``), with Pillow's decode-only time.

Every comparison first asserts that both sides give the same bits. ``--distance`` prints how
far the two references are apart (through the two modes, each proven bit-exact with its
reference by the plugin's tests) instead. Run:
.venv/bin/python bench/bench_kimi.py [--quick] [--distance]   (needs the kimi plugin, Pillow
and scikit-image; torch optional: from a torch venv that sees this one's site-packages, add the
sources that its development-mode .pth files name, ``PYTHONPATH=.:plugins/kimi``)."""

from __future__ import annotations

import io
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.simplefilter("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "kimi" / "tests"))

from _images import hf_load, mosaic  # noqa: E402
from _kimi_corpus import CASES, make_input  # noqa: E402
from _kimi_refs import K3_CFG, K3_TOKENIZER_JSON, checkpoint_pixels, k3_checkpoint  # noqa: E402
from _timing import interleaved  # noqa: E402

from sglang_mm_core import MmInput, pipeline_from_spec  # noqa: E402

QUICK = "--quick" in sys.argv
PAD = 163605


def request(data: bytes) -> MmInput:
    return MmInput(input_ids=[163587, PAD, 163586], images=[data])


def spec(resample: str) -> dict[str, Any]:
    out: dict[str, Any] = {"family": "kimi", "params": {"resample": resample}, "threads": 0}
    if resample == "aten_u8":
        out["decode"] = {"alpha": "white", "exif_orientation": True}
    return out


def assert_same(item: Any, pixel_values: Any, grid: Any) -> None:
    want = np.ascontiguousarray(np.asarray(pixel_values), dtype=np.float32)
    np.testing.assert_array_equal(item.feature.array.view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(item.aux["image_grid_thw"].array, np.asarray(grid).reshape(1, 3))


def against_checkpoint(
    name: str, data: bytes, repeat: int, the_spec: dict[str, Any], what: str, ref: Any
) -> None:
    """``the_spec`` (threads=0) against the checkpoint processor ``ref`` (bytes -> pixels,
    grid, ...) and Pillow's decode-only time, the bits asserted equal first."""
    with pipeline_from_spec(the_spec) as p:
        req = request(data)
        want, grid = ref(data)[:2]
        assert_same(p.process(req).items[0], want, grid)
        t = interleaved(
            {
                "ref": lambda: ref(data),
                "decode": lambda: Image.open(io.BytesIO(data)).convert("RGB"),
                "ours": lambda: p.process(req),
            },
            repeat,
        )
    print(
        f"{name}: checkpoint {what} + Pillow decode {t['ref']:8.1f} ms; Pillow decode only "
        f"{t['decode']:7.1f} ms; sglang-mm threads=0 {t['ours']:7.1f} ms -> "
        f"{t['ref'] / t['ours']:4.1f}x the reference, {t['ours'] / t['decode']:4.2f}x "
        "decode-only (target >= 5x or <= 1.5x)"
    )


def end_to_end(name: str, data: bytes, repeat: int) -> None:
    against_checkpoint(name, data, repeat, spec("pil"), "KimiK25VisionProcessor", checkpoint_pixels)
    torch_compare(name, data, repeat)


def k3_end_to_end(name: str, data: bytes, repeat: int) -> None:
    params = {
        "generation": "k3",
        "max_patches": K3_CFG["in_patch_limit"],
        "tokenizer": str(K3_TOKENIZER_JSON),
        "transparent_bg_config": K3_CFG["transparent_bg_config"],
        "transparent_bg_fill_stage": K3_CFG["transparent_bg_fill_stage"],
    }
    k3_spec = {"family": "kimi", "params": params, "threads": 0}
    against_checkpoint(name, data, repeat, k3_spec, "Kimi K3 processor", k3_checkpoint)


def torch_compare(name: str, data: bytes, repeat: int) -> None:
    try:
        import torch
        from transformers.models.kimi_k25.image_processing_kimi_k25 import (
            Kimi_K25ImageProcessor,
        )
    except ImportError:
        print(f"{name}: torchvision backend: skipped (torch is not installed here)")
        return
    torch.set_num_threads(1)
    ref = Kimi_K25ImageProcessor()

    def hf() -> Any:
        return ref(images=[hf_load(data)], return_tensors="pt")

    with pipeline_from_spec(spec("aten_u8")) as p:
        req = request(data)
        out = hf()
        assert_same(p.process(req).items[0], out["pixel_values"].numpy(), out["image_grid_thw"])
        t = interleaved({"tv": hf, "ours": lambda: p.process(req)}, repeat)
    print(
        f"{name}: HF Kimi_K25ImageProcessor (torchvision, torch threads=1) + Pillow decode "
        f"{t['tv']:8.1f} ms; sglang-mm aten_u8 threads=0 {t['ours']:7.1f} ms -> "
        f"{t['tv'] / t['ours']:4.1f}x (target >= 2x)"
    )


def distance() -> None:
    """How far apart the two references are, per corpus image, through the two modes (each
    proven bit-exact with its reference by the plugin's tests): the float32 ``pixel_values``
    (max |difference|, share of differing values) and the resized uint8 samples under them
    (the compact codes: max |difference| in levels, share differing). Geometry and padding
    are the same in both; the resize (Pillow's fixed-point bicubic vs torchvision's) and the
    normalize's float rounding (numpy float64 steps vs torchvision's folded float32) differ."""
    from sglang_mm_kimi import KimiFamily

    pil, aten = KimiFamily({"resample": "pil"}), KimiFamily({"resample": "aten_u8"})
    rows: list[tuple[str, np.ndarray]] = [(c[0], make_input(c[1])) for c in CASES if not c[2]]
    rows += [("logo_rgba.png (alpha dropped)", make_input({"photo": "logo_rgba.png"}))]
    print(
        f"{'image':30} {'resized':>11} {'max|dv|':>9} {'values':>7} {'max|ds|':>7} {'samples':>8}"
    )
    worst = 0.0
    for name, arr in rows:
        a = pil.process_item(arr).feature.array
        b = aten.process_item(arr).feature.array
        ca = pil.process_item(arr, compact=True).feature.codes.astype(np.int16)
        cb = aten.process_item(arr, compact=True).feature.codes.astype(np.int16)
        size = pil.navit(arr.shape[1], arr.shape[0])
        dv = float(np.abs(a - b).max())
        worst = max(worst, dv)
        ds = np.abs(ca - cb)
        print(
            f"{name:30} {size.width:>5}x{size.height:<5} {dv:9.2e} "
            f"{np.count_nonzero(a != b) / a.size:7.1%} {int(ds.max()):7d} "
            f"{np.count_nonzero(ds) / ds.size:8.2%}"
        )
    print(f"largest |difference| of a value: {worst:.3g}")


def main() -> None:
    if "--distance" in sys.argv:
        distance()
        return
    r = 3 if QUICK else 9
    hd = mosaic((1920, 1080), 2, 2, first=1)
    mp12 = mosaic((4032, 3024), 4, 2)
    print(f"inputs: 1080p JPEG {len(hd) / 1e3:.0f} kB, 12 MP JPEG {len(mp12) / 1e6:.1f} MB")
    end_to_end("1080p", hd, r)
    end_to_end("12MP ", mp12, 2 if QUICK else 5)
    k3_end_to_end("1080p", hd, r)
    k3_end_to_end("12MP ", mp12, 2 if QUICK else 5)


if __name__ == "__main__":
    main()
