"""The transformers drop-ins vs the stock HF processors they replace, interleaved in one
process, one thread on every side; prints medians and ratios.

For every installed family class (`sglang_mm_core.hf.processor_classes`), on a 1080p and a
12 MP JPEG (photo mosaics), with the served checkpoints' settings (HF's class defaults, or
`SHIPPED`):
  1. given a PIL image (what callers hold today): HF's PIL class vs ours
     (target >= 5x; >= 2x against the torchvision class where torch is installed);
  2. given the file's bytes: ``Image.open`` + HF's PIL class vs ours on the bytes (target >= 8x),
     with Pillow's decode-only time beside it;
  3. where torchvision is installed: HF's torchvision class (what ``from_pretrained`` picks
     there) vs ours at its default reference, given the PIL image (target >= 2x).
Each pair is first checked to give the same BatchFeature bit for bit (torch tensors in 3).

Run: .venv/bin/python bench/bench_transformers.py [--quick]; for section 3, from a venv with
torch and torchvision whose path also holds the project's packages (a .pth file naming
.venv's site-packages), e.g. /path/to/torchenv/bin/python bench/bench_transformers.py."""

from __future__ import annotations

import functools
import io
import os
import sys
import warnings
from collections.abc import Callable

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.simplefilter("ignore")

from _images import mosaic  # noqa: E402
from _timing import interleaved  # noqa: E402
from PIL import Image  # noqa: E402

import sglang_mm_core.hf as mmhf  # noqa: E402
from sglang_mm_core.conformance.hf import assert_batch_features_equal  # noqa: E402

QUICK = "--quick" in sys.argv
SIZES = {"1080p": ((1920, 1080), 4, 2), "12MP": ((4032, 3024), 4, 3)}
#: Settings as the served checkpoints ship them, where HF's class defaults are another model's
#: (GotOcr2ImageProcessor's defaults are GOT-OCR 2's; InternVL 3 tiles 448 px, up to 12).
SHIPPED: dict[str, dict[str, object]] = {
    "GotOcr2ImageProcessor": {
        "size": {"height": 448, "width": 448},
        "crop_to_patches": True,
        "min_patches": 1,
        "max_patches": 12,
        "image_mean": [0.485, 0.456, 0.406],
        "image_std": [0.229, 0.224, 0.225],
    },
}


def stock_class(cls: type) -> type:
    """The HF PIL class ours subclasses."""
    return next(b for b in cls.__mro__[1:] if b.__module__.startswith("transformers.models."))


def decoded(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img


def _on(image: object, **processors: Callable[[object], object]) -> dict[str, Callable[[], object]]:
    """Each processor called on ``image``, by name."""
    return {name: functools.partial(p, image) for name, p in processors.items()}


def _decode_then(fn: Callable[[Image.Image], object], data: bytes) -> Callable[[], object]:
    return lambda: fn(decoded(data))


def torchvision_section(repeat: int) -> None:
    import torch
    import transformers
    from transformers.utils.import_utils import is_torchvision_available

    if not is_torchvision_available():
        print("\n(torchvision not installed: section 3 skipped)")
        return
    torch.set_num_threads(1)
    print(f"\nvs HF's torchvision classes (torch {torch.__version__}), given a PIL image (ms)")
    print(f"{'class':34} {'size':6} {'HF tv':>8} {'ours':>8} {'ratio':>6}")
    for cls in mmhf.processor_classes():
        settings = SHIPPED.get(cls.replaces, {})
        tv = getattr(transformers, cls.replaces)(**settings)
        ours = cls(**settings)
        assert ours.reference == "aten_u8"
        ours.threads = 1
        for label, (size, cols, rows) in SIZES.items():
            pil = decoded(mosaic(size, cols, rows)).convert("RGB")
            try:
                assert_batch_features_equal(ours(pil), tv(pil))
            except AssertionError as e:
                print(f"{cls.__name__:34} {label:6} NOT EQUAL to HF's torchvision class: {e}")
                continue
            t = interleaved(_on(pil, tv=tv, ours=ours), repeat)
            print(
                f"{cls.__name__:34} {label:6} {t['tv']:8.1f} {t['ours']:8.1f} "
                f"{t['tv'] / t['ours']:5.1f}x",
                flush=True,
            )


def main() -> None:
    repeat = 3 if QUICK else 7
    print(f"one thread each side, medians of {repeat} interleaved runs (ms)")
    header = (
        f"{'class':34} {'size':6} {'HF pil':>8} {'ours':>8} {'ratio':>6} | "
        f"{'HF bytes':>8} {'ours':>8} {'ratio':>6} {'decode':>7} {'ours/dec':>8}"
    )
    print(header)
    for cls in mmhf.processor_classes():
        settings = SHIPPED.get(cls.replaces, {})
        hf = stock_class(cls)(**settings)
        ours = cls(resample="pil", **settings)
        ours.threads = 1
        for label, (size, cols, rows) in SIZES.items():
            data = mosaic(size, cols, rows)
            pil = decoded(data).convert("RGB")
            assert_batch_features_equal(ours(pil), hf(pil))
            assert_batch_features_equal(ours(data), hf(decoded(data)))
            t = interleaved(
                {
                    **_on(pil, hf_pil=hf, ours_pil=ours),
                    **_on(data, ours_bytes=ours),
                    "hf_bytes": _decode_then(hf, data),
                    "decode": _decode_then(lambda img: img, data),
                },
                repeat,
            )
            print(
                f"{cls.__name__:34} {label:6} {t['hf_pil']:8.1f} {t['ours_pil']:8.1f} "
                f"{t['hf_pil'] / t['ours_pil']:5.1f}x | {t['hf_bytes']:8.1f} "
                f"{t['ours_bytes']:8.1f} {t['hf_bytes'] / t['ours_bytes']:5.1f}x "
                f"{t['decode']:7.1f} {t['ours_bytes'] / t['decode']:7.2f}x",
                flush=True,
            )
    try:
        import torch  # noqa: F401
    except ImportError:
        print("\n(torch not installed: section 3 skipped)")
    else:
        torchvision_section(repeat)


if __name__ == "__main__":
    main()
