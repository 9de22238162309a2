"""The extension's ``inkling`` submodule, on the `sglang_mm_inkling` plugin: same names,
parameters and return values. ``(h, w)`` is the size after the rescale; ``bits`` the flat
single-frame ``[num_patches * ps * ps * 3]`` bfloat16 bits (uint16); ``hash`` the content hash
of the encoded bytes.

The extension accepts a ``rescale_cap`` with any fraction; the plugin takes one only with a
fraction > 1, the only case where it can change the size, so here a cap beside a smaller (or
no) fraction is dropped, which gives the same result."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from ._support import missing_plugin, threads
from .errors import value_errors

try:
    import sglang_mm_inkling as _ink
except ModuleNotFoundError as e:  # installed without its dependencies
    raise missing_plugin(e, "sglang-mm-inkling", "inkling")  # noqa: B904 (the cause is kept)

Data = bytes | bytearray | memoryview
Bits = npt.NDArray[np.uint16]


def _cap(rescale_frac: float | None, rescale_cap: int | None) -> int | None:
    return rescale_cap if rescale_frac is not None and rescale_frac > 1 else None


@value_errors
def decode_patchify(
    data: Data, patch_size: int, rescale_frac: float | None = None, rescale_cap: int | None = None
) -> tuple[int, int, Bits]:
    """``(h, w, bits)`` of one encoded image."""
    cap = _cap(rescale_frac, rescale_cap)
    return _ink.decode_patchify(data, patch_size, rescale_frac, cap, threads=threads())


@value_errors
def decode_patchify_batch(
    datas: Iterable[Data],
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
) -> list[tuple[int, int, Bits]]:
    """`decode_patchify` of every item, in parallel, in input order."""
    cap = _cap(rescale_frac, rescale_cap)
    return _ink.decode_patchify_batch(datas, patch_size, rescale_frac, cap, threads=threads())


@value_errors
def preprocess_images(
    datas: Iterable[Data],
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
) -> list[tuple[int, int, Bits, int]]:
    """``(h, w, bits, hash)`` of every item, in parallel, in input order."""
    cap = _cap(rescale_frac, rescale_cap)
    return _ink.preprocess_images(datas, patch_size, rescale_frac, cap, threads=threads())


@value_errors
def patchify_rgb(arr: npt.NDArray[np.uint8], patch_size: int) -> Bits:
    """The patches of an RGB uint8 ``[h, w, 3]`` image as it is (no rescale)."""
    return _ink.patchify_rgb(arr, patch_size, threads=threads())


@value_errors
def rescale_patchify_hash(
    arr: npt.NDArray[np.uint8],
    raw_bytes: Data,
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
) -> tuple[int, int, Bits, int]:
    """``(h, w, bits, hash)`` of an image the caller decoded (``arr``), hashed from its encoded
    bytes ``raw_bytes``."""
    cap = _cap(rescale_frac, rescale_cap)
    return _ink.rescale_patchify_hash(
        arr, raw_bytes, patch_size, rescale_frac, cap, threads=threads()
    )


__all__ = [
    "decode_patchify",
    "decode_patchify_batch",
    "patchify_rgb",
    "preprocess_images",
    "rescale_patchify_hash",
]
