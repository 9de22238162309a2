"""Gemma 4 family vs its references, interleaved in one process, one thread on both sides;
prints median times and ratios, bytes -> pixel_values (with the position ids and soft-token
counts) end to end for a 1080p and a 12-megapixel JPEG:

  1. threads=0, `resample: "pil"`, vs HF `Gemma4ImageProcessorPil` with Pillow's decode
     (target >= 5x, or <= 1.5x Pillow's decode-only time), with Pillow's decode-only time;
  2. `resample: "aten_u8"` vs HF's torchvision backend (`Gemma4ImageProcessor`) on the CPU,
     torch on one thread, when torch is importable (target >= 2x).

  3. a video (40 frames of 1280x720 at 25 fps, made with PyAV's libx264; the default 32
     frames sampled, 70 soft tokens each), `Pipeline.process` of its bytes (threads=0) vs
     HF's `load_video(backend="pyav")` (its sampling) and `Gemma4VideoProcessor` (torchvision,
     torch on one thread), with PyAV's decode-only time of the same frames, when torch is
     importable (`--video`).

Every comparison first asserts that the two sides give the same bits. Run:
.venv/bin/python bench/bench_gemma4.py [--quick] [--tokens N] [--video]   (needs the gemma4 plugin,
transformers, Pillow and scikit-image; torch optional: from a torch venv that sees this one's
site-packages, add the sources that its development-mode .pth files name,
``PYTHONPATH=.:plugins/gemma4``)."""

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
TOKENS = int(sys.argv[sys.argv.index("--tokens") + 1]) if "--tokens" in sys.argv else 280
IMAGE_TOKEN_ID = 258880


def hf_load(data: bytes) -> Image.Image:
    """What HF's load_image does with bytes: Pillow decode, EXIF transpose, RGB."""
    im: Image.Image = Image.open(io.BytesIO(data))
    im = ImageOps.exif_transpose(im)
    return im.convert("RGB")


def request(data: bytes) -> MmInput:
    return MmInput(input_ids=[2, IMAGE_TOKEN_ID, 7], images=[data])


def spec(resample: str) -> dict[str, Any]:
    params = {"resample": resample, "max_soft_tokens": TOKENS}
    return {"family": "gemma4", "params": params, "threads": 0}


def assert_same(item: Any, want: Any) -> None:
    """Our item against HF's batch of one: pixels as float32 bits, positions and counts."""
    pv = np.asarray(want["pixel_values"])[0]
    np.testing.assert_array_equal(item.feature.array.view(np.uint32), pv.view(np.uint32))
    np.testing.assert_array_equal(
        item.aux["image_position_ids"].array, np.asarray(want["image_position_ids"])[0]
    )
    np.testing.assert_array_equal(
        item.aux["num_soft_tokens_per_image"].array,
        np.asarray(want["num_soft_tokens_per_image"]).reshape(-1),
    )


def end_to_end(name: str, data: bytes, repeat: int) -> None:
    from transformers import Gemma4ImageProcessorPil

    ref = Gemma4ImageProcessorPil(max_soft_tokens=TOKENS)
    with pipeline_from_spec(spec("pil")) as p:
        req = request(data)
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
        f"{name}: HF Gemma4ImageProcessorPil + Pillow decode {t['hf']:8.1f} ms; Pillow decode "
        f"only {t['decode']:7.1f} ms; sglang-mm pil threads=0 {t['ours']:7.1f} ms -> "
        f"{t['hf'] / t['ours']:4.1f}x HF, {t['ours'] / t['decode']:4.2f}x decode-only "
        "(target >= 5x or <= 1.5x)"
    )
    torch_compare(name, data, repeat)


def torch_compare(name: str, data: bytes, repeat: int) -> None:
    try:
        import torch
        from transformers import Gemma4ImageProcessor
    except ImportError:
        print(f"{name}: torchvision backend: skipped (torch is not installed here)")
        return
    torch.set_num_threads(1)
    ref = Gemma4ImageProcessor(max_soft_tokens=TOKENS)
    with pipeline_from_spec(spec("aten_u8")) as p:
        req = request(data)
        assert_same(p.process(req).items[0], ref(images=[hf_load(data)], return_tensors="pt"))
        t = interleaved(
            {
                "tv": lambda: ref(images=[hf_load(data)], return_tensors="pt"),
                "ours": lambda: p.process(req),
            },
            repeat,
        )
    print(
        f"{name}: HF Gemma4ImageProcessor (torchvision, torch threads=1) + Pillow decode "
        f"{t['tv']:8.1f} ms; sglang-mm aten_u8 threads=0 {t['ours']:7.1f} ms -> "
        f"{t['tv'] / t['ours']:4.1f}x (target >= 2x)"
    )


def video_compare(repeat: int) -> None:
    """A 40-frame 720p clip: ours from its bytes against HF's reader and video processor."""
    try:
        import torch
        from transformers import Gemma4VideoProcessor
        from transformers.video_utils import load_video
    except ImportError:
        print("video: skipped (torch is not installed here)")
        return
    import tempfile
    from pathlib import Path

    import av

    from sglang_mm_core.conformance.video import make_clip

    torch.set_num_threads(1)
    data = make_clip("libx264", 1280, 720, 40)
    ref = Gemma4VideoProcessor()
    tok = Path(__file__).resolve().parents[1] / "plugins/gemma4/tests/fixtures/gemma4_tokenizer"
    params = {"resample": "aten_u8", "tokenizer": str(tok)}
    with (
        tempfile.TemporaryDirectory() as d,
        pipeline_from_spec({"family": "gemma4", "params": params, "threads": 0}) as p,
    ):
        path = Path(d) / "clip.mp4"
        path.write_bytes(data)
        req = MmInput(input_ids=[2, 258884, 7], videos=[data])

        def hf() -> Any:
            frames, meta = load_video(str(path), backend="pyav", sample_indices_fn=sampler)
            return ref(
                videos=[frames], video_metadata=[meta], do_sample_frames=False, return_tensors="pt"
            )

        def sampler(metadata: Any, **kw: Any) -> Any:
            return ref.sample_frames(metadata, num_frames=32)

        wanted = {i * 40 // 32 for i in range(32)}  # default_sample_indices_fn's

        def decode() -> None:
            with av.open(str(path)) as c:
                c.streams.video[0].thread_type = "AUTO"
                for i, frame in enumerate(c.decode(video=0)):
                    if i in wanted:
                        frame.to_ndarray(format="rgb24")

        got = p.process(req).items[0]
        want = hf()["pixel_values_videos"].numpy()
        np.testing.assert_array_equal(got.feature.array.view(np.uint32), want.view(np.uint32))
        t = interleaved({"hf": hf, "decode": decode, "ours": lambda: p.process(req)}, repeat)
    print(
        f"video 32 of 40 frames 1280x720: HF load_video(pyav) + Gemma4VideoProcessor (torch "
        f"threads=1) {t['hf']:8.1f} ms; PyAV decode only {t['decode']:7.1f} ms; sglang-mm "
        f"threads=0 {t['ours']:7.1f} ms -> {t['hf'] / t['ours']:4.1f}x HF, "
        f"{t['ours'] / t['decode']:4.2f}x decode-only"
    )


def main() -> None:
    if "--video" in sys.argv:
        video_compare(3 if QUICK else 7)
        return
    r = 3 if QUICK else 9
    hd = mosaic((1920, 1080), 2, 2, first=1)
    mp12 = mosaic((4032, 3024), 4, 2)
    print(
        f"inputs: 1080p JPEG {len(hd) / 1e3:.0f} kB, 12 MP JPEG {len(mp12) / 1e6:.1f} MB; "
        f"max_soft_tokens {TOKENS}"
    )
    end_to_end("1080p", hd, r)
    end_to_end("12MP ", mp12, 2 if QUICK else 5)


if __name__ == "__main__":
    main()
