"""Inkling's kernels vs their references, side by side in one process; prints times and ratios.

  1. bytes -> bf16 patches for a 1080p JPEG, default params (rescale 2.0, cap 2048):
     the numpy + Pillow reference of the spec vs the original API's `decode_patchify` (this
     package's Rust, on the core's feature pipeline) on one thread (target >= 4x);
  2. the same with the default pool vs Pillow's single-threaded decode alone (target <= 1.5x);
  3. decode_patchify_batch of 8 1080p JPEGs, 2 threads vs 1 (target >= 1.7x throughput);
  4. the family's `process_item` (the core's composition, as a pipeline runs it) on the decoded
     image vs the original API's `rescale_patchify_hash` on the same array (target <= 1.1x),
     and its compact form.

Run: .venv/bin/python bench/bench_inkling.py   (needs the plugin installed, Pillow, skimage)."""

from __future__ import annotations

import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "inkling" / "tests"))
import inkling_reference as ref
from _images import jpeg, mosaic, photos
from sglang_mm_inkling import (
    InklingFamily,
    InklingParams,
    decode_patchify,
    decode_patchify_batch,
    rescale_patchify_hash,
)

PS, FRAC, CAP = 40, 2.0, 2048
SIZE = (1920, 1080)


def mosaic_1080p() -> bytes:
    """A 1920x1080 JPEG of four photos (960x540 each), so it has photo-like detail throughout."""
    return mosaic(SIZE, 2, 2, first=1)


def batch_1080p() -> list[bytes]:
    return [jpeg(Image.fromarray(a).resize(SIZE, Image.Resampling.LANCZOS)) for a in photos()]


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time in ms after two warm-up calls."""
    fn()
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def family_vs_api(data: bytes) -> None:
    """Section 4: the same bits through the family (the core's composition) and the API."""
    rgb = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    params = InklingParams(
        patch_size=PS, rescale_image_frac=FRAC, rescale_image_max_upscaled_long_edge=CAP
    )
    fam = InklingFamily(params)
    item = fam.process_item(rgb, threads=1)
    _, _, bits, _ = rescale_patchify_hash(rgb, data, PS, FRAC, CAP, threads=1)
    assert np.array_equal(item.feature.array[:, 0].reshape(-1), bits), "family differs from API"
    for n in (1, 2):
        t_api = timed(lambda n=n: rescale_patchify_hash(rgb, data, PS, FRAC, CAP, threads=n), 31)
        t_fam = timed(lambda n=n: fam.process_item(rgb, threads=n), 31)
        t_cmp = timed(lambda n=n: fam.process_item(rgb, threads=n, compact=True), 31)
        print(
            f"rgb -> patches, {n} thread(s): API {t_api:6.2f} ms, family {t_fam:6.2f} ms "
            f"(family/API {t_fam / t_api:4.2f}x, <= 1.1), compact {t_cmp:6.2f} ms"
        )


def pillow_decode(data: bytes) -> None:
    with Image.open(io.BytesIO(data)) as im:
        im.load()


def main() -> None:
    cores = os.cpu_count() or 1
    data = mosaic_1080p()
    print(f"1080p JPEG: {len(data)} bytes; cores: {cores}; params ps={PS} frac={FRAC} cap={CAP}")

    h, w, want = ref.decode_patchify(data, PS, FRAC, CAP)
    gh, gw, got = decode_patchify(data, PS, FRAC, CAP, threads=1)
    assert (gh, gw) == (h, w) and np.array_equal(got, want), "kernel differs from the reference"
    print(f"output: {h}x{w} -> {len(got) // (PS * PS * 3)} patches (bit-exact with the reference)")

    t_ref = timed(lambda: ref.decode_patchify(data, PS, FRAC, CAP), 7)
    t_one = timed(lambda: decode_patchify(data, PS, FRAC, CAP, threads=1), 31)
    t_pool = timed(lambda: decode_patchify(data, PS, FRAC, CAP), 31)
    t_dec = timed(lambda: pillow_decode(data), 31)
    t_dec_rgb = timed(lambda: Image.open(io.BytesIO(data)).convert("RGB"), 31)
    print(f"numpy+Pillow reference          {t_ref:8.2f} ms")
    print(f"kernel, 1 thread                {t_one:8.2f} ms   speedup {t_ref / t_one:5.2f}x (>= 4)")
    print(f"kernel, default pool            {t_pool:8.2f} ms")
    print(
        f"Pillow decode only (load)       {t_dec:8.2f} ms   kernel/decode {t_pool / t_dec:5.2f}x"
        " (<= 1.5)"
    )
    print(
        f"Pillow decode + convert('RGB')  {t_dec_rgb:8.2f} ms   kernel/decode "
        f"{t_pool / t_dec_rgb:5.2f}x"
    )

    batch = batch_1080p()
    t_b1 = timed(lambda: decode_patchify_batch(batch, PS, FRAC, CAP, threads=1), 9)
    t_b2 = timed(lambda: decode_patchify_batch(batch, PS, FRAC, CAP, threads=2), 9)
    print(f"batch of 8, 1 thread            {t_b1:8.2f} ms   {8e3 / t_b1:6.1f} img/s")
    print(
        f"batch of 8, 2 threads           {t_b2:8.2f} ms   {8e3 / t_b2:6.1f} img/s   "
        f"throughput {t_b1 / t_b2:4.2f}x (>= 1.7)"
    )
    family_vs_api(data)


if __name__ == "__main__":
    main()
