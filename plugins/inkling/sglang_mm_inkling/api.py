"""The original ``inkling`` module's functions, with the core's thread decision.

The kernels never read the environment: a call that leaves ``threads`` out gets the pool size
of `sglang_mm_core.plugin.resolve_threads` (``$SGLANG_MM_THREADS``, else ``min(8, cores)``),
the same number a pipeline would use, and passes it down."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from sglang_mm_core.plugin import resolve_threads

from . import _native

Data = bytes | bytearray | memoryview
Bits = npt.NDArray[np.uint16]


def _threads(threads: int | None) -> int:
    return resolve_threads(None) if threads is None else threads


def patchify_rgb(
    arr: npt.NDArray[np.uint8], patch_size: int, *, threads: int | None = None
) -> Bits:
    """Patches of an RGB ``[h, w, 3]`` uint8 image as it is (no rescale)."""
    return _native.patchify_rgb(arr, patch_size, threads=_threads(threads))


def rescale_patchify_hash(
    arr: npt.NDArray[np.uint8],
    raw_bytes: Data,
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
    *,
    threads: int | None = None,
) -> tuple[int, int, Bits, int]:
    """``(h, w, bits, hash)`` of an image the caller decoded itself (``arr``, RGB ``[h, w, 3]``
    uint8): rescaled and cut as `decode_patchify` does, with the core content hash of its
    encoded bytes ``raw_bytes``, so the hash is the one `preprocess_images` gives the same
    source."""
    return _native.rescale_patchify_hash(
        arr, raw_bytes, patch_size, rescale_frac, rescale_cap, threads=_threads(threads)
    )


def decode_patchify(
    data: Data,
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
    *,
    threads: int | None = None,
) -> tuple[int, int, Bits]:
    """``(h, w, bits)`` of one encoded image; ``(h, w)`` is the size after the rescale."""
    return _native.decode_patchify(
        data, patch_size, rescale_frac, rescale_cap, threads=_threads(threads)
    )


def decode_patchify_batch(
    datas: Iterable[Data],
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
    *,
    threads: int | None = None,
) -> list[tuple[int, int, Bits]]:
    """`decode_patchify` of every item, in parallel, in input order."""
    return _native.decode_patchify_batch(
        datas, patch_size, rescale_frac, rescale_cap, threads=_threads(threads)
    )


def preprocess_images(
    datas: Iterable[Data],
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
    *,
    threads: int | None = None,
) -> list[tuple[int, int, Bits, int]]:
    """`decode_patchify_batch` plus the core content hash of each item's encoded bytes."""
    return _native.preprocess_images(
        datas, patch_size, rescale_frac, rescale_cap, threads=_threads(threads)
    )


__all__ = [
    "decode_patchify",
    "decode_patchify_batch",
    "patchify_rgb",
    "preprocess_images",
    "rescale_patchify_hash",
]
