"""Stub of the Rust extension ``sglang_mm_inkling._native``: the original module's API."""

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

_Data = bytes | bytearray | memoryview
_Bits = npt.NDArray[np.uint16]

__version__: str

def rescale_patchify_hash(
    arr: npt.NDArray[np.uint8],
    raw_bytes: _Data,
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
    *,
    threads: int,
) -> tuple[int, int, _Bits, int]: ...
def patchify_rgb(arr: npt.NDArray[np.uint8], patch_size: int, *, threads: int) -> _Bits: ...
def decode_patchify(
    data: _Data,
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
    *,
    threads: int,
) -> tuple[int, int, _Bits]: ...
def decode_patchify_batch(
    datas: Iterable[_Data],
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
    *,
    threads: int,
) -> list[tuple[int, int, _Bits]]: ...
def preprocess_images(
    datas: Iterable[_Data],
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
    *,
    threads: int,
) -> list[tuple[int, int, _Bits, int]]: ...
