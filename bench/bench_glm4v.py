"""GLM-4.xV family vs its references, interleaved in one process, one thread on both sides;
prints median times and ratios, bytes -> pixel_values (with image_grid_thw) end to end for a
1080p and a 12-megapixel JPEG, at the checkpoints' size (shortest_edge 12544, longest_edge
9633792):

  1. threads=0, `resample: "pil"`, vs HF `Glm46VImageProcessorPil` with Pillow's decode
     (target >= 5x, or <= 1.5x Pillow's decode-only time), with Pillow's decode-only time;
  2. `resample: "aten_u8"` vs HF's torchvision backend (`Glm46VImageProcessor`) on the CPU,
     torch on one thread, when torch is importable (target >= 2x).

(``Glm4vImageProcessor*`` is the same code under another name.) Both comparisons first assert
that the two sides give the same bits. Run:
.venv/bin/python bench/bench_glm4v.py [--quick]   (needs the glm4v plugin, transformers,
Pillow and scikit-image; torch optional: from a torch venv that sees this one's site-packages,
add the sources that its development-mode .pth files name, ``PYTHONPATH=.:plugins/glm4v``)."""

from __future__ import annotations

import io
import os
import sys
import warnings
from typing import Any

import numpy as np
from PIL import Image, ImageOps

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.simplefilter("ignore")

from _images import mosaic  # noqa: E402
from _timing import interleaved  # noqa: E402

from sglang_mm_core import MmInput, pipeline_from_spec  # noqa: E402

QUICK = "--quick" in sys.argv
SIZE = {"shortest_edge": 12544, "longest_edge": 9633792}
# <|begin_of_image|> <|image|> <|end_of_image|>
PROMPT = [151331, 151339, 151343, 151340, 100]


def hf_load(data: bytes) -> Image.Image:
    """What HF's load_image does with bytes: Pillow decode, EXIF transpose, RGB."""
    im: Image.Image = Image.open(io.BytesIO(data))
    im = ImageOps.exif_transpose(im)
    return im.convert("RGB")


def spec(resample: str) -> dict[str, Any]:
    return {"family": "glm4v", "params": {"resample": resample}, "threads": 0}


def assert_same(item: Any, want: Any) -> None:
    """Our item against HF's batch of one: pixels as float32 bits, the grid."""
    pv = np.asarray(want["pixel_values"])
    np.testing.assert_array_equal(item.feature.array.view(np.uint32), pv.view(np.uint32))
    np.testing.assert_array_equal(
        item.aux["image_grid_thw"].array, np.asarray(want["image_grid_thw"])
    )


def end_to_end(name: str, data: bytes, repeat: int) -> None:
    from transformers import Glm46VImageProcessorPil

    ref = Glm46VImageProcessorPil(size=SIZE)
    with pipeline_from_spec(spec("pil")) as p:
        req = MmInput(input_ids=PROMPT, images=[data])
        assert_same(p.process(req).items[0], ref(images=[hf_load(data)], return_tensors="np"))
        t = interleaved(
            {
                "hf": lambda: ref(images=[hf_load(data)], return_tensors="np"),
                "decode": lambda: hf_load(data).load(),
                "ours": lambda: p.process(req),
            },
            repeat,
        )
    print(
        f"{name}: HF Glm46VImageProcessorPil + Pillow decode {t['hf']:8.1f} ms; Pillow decode "
        f"only {t['decode']:7.1f} ms; sglang-mm pil threads=0 {t['ours']:7.1f} ms -> "
        f"{t['hf'] / t['ours']:4.1f}x HF, {t['ours'] / t['decode']:4.2f}x decode-only "
        "(target >= 5x or <= 1.5x)"
    )
    torch_compare(name, data, repeat)


def torch_compare(name: str, data: bytes, repeat: int) -> None:
    try:
        import torch
        from transformers import Glm46VImageProcessor
    except ImportError:
        print(f"{name}: torchvision backend: skipped (torch is not installed here)")
        return
    torch.set_num_threads(1)
    ref = Glm46VImageProcessor(size=SIZE)
    with pipeline_from_spec(spec("aten_u8")) as p:
        req = MmInput(input_ids=PROMPT, images=[data])
        assert_same(p.process(req).items[0], ref(images=[hf_load(data)], return_tensors="pt"))
        t = interleaved(
            {
                "tv": lambda: ref(images=[hf_load(data)], return_tensors="pt"),
                "ours": lambda: p.process(req),
            },
            repeat,
        )
    print(
        f"{name}: HF Glm46VImageProcessor (torchvision, torch threads=1) + Pillow decode "
        f"{t['tv']:8.1f} ms; sglang-mm aten_u8 threads=0 {t['ours']:7.1f} ms -> "
        f"{t['tv'] / t['ours']:4.1f}x (target >= 2x)"
    )


def main() -> None:
    r = 3 if QUICK else 9
    hd = mosaic((1920, 1080), 2, 2, first=1)
    mp12 = mosaic((4032, 3024), 4, 2)
    print(f"inputs: 1080p JPEG {len(hd) / 1e3:.0f} kB, 12 MP JPEG {len(mp12) / 1e6:.1f} MB")
    end_to_end("1080p", hd, r)
    end_to_end("12MP ", mp12, 2 if QUICK else 5)


if __name__ == "__main__":
    main()
