"""Type stubs of the Rust extension module (see rust/core-py)."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Buffer = bytes | bytearray | memoryview

__version__: str
DEFAULT_MAX_PIXELS: int
DEFAULT_MAX_SIDE: int

def image_decode_rgb(
    data: Buffer,
    alpha: str = "white",
    exif_orientation: bool = True,
    max_pixels: int = ...,
    max_side: int = ...,
) -> npt.NDArray[np.uint8]: ...
def image_dimensions(
    data: Buffer,
    exif_orientation: bool = True,
    max_pixels: int | None = None,
    max_side: int | None = None,
) -> tuple[int, int]: ...
def image_source_mode(data: Buffer) -> tuple[str, bool, str]: ...
def image_stream_size(
    data: Buffer,
    alpha: str = "white",
    exif_orientation: bool = True,
    max_pixels: int | None = None,
    max_side: int | None = None,
) -> tuple[int, int] | None: ...
def resize_rgb(
    arr: npt.NDArray[np.uint8],
    out_w: int,
    out_h: int,
    resample: str = "pil_lanczos",
    pass_order: str = "pillow13",
    threads: int = 1,
) -> npt.NDArray[np.uint8]: ...
def scaled_dims(w: int, h: int, frac: float, cap: int | None = None) -> tuple[int, int]: ...
def content_hash(data: Buffer) -> int: ...
def blake3_hex(data: Buffer) -> str: ...
def base64_decoded_len(data: str | Buffer, start: int = 0) -> int: ...
def base64_decode(data: str | Buffer, start: int = 0, sniff: bool = False) -> bytes: ...
def percent_decoded_len(data: str | Buffer, start: int = 0) -> int: ...
def percent_decode(data: str | Buffer, start: int = 0, sniff: bool = False) -> bytes: ...
def parallel_enabled() -> bool: ...
def json_shape(data: Buffer) -> tuple[int, int, int, int, int | None]: ...
def json_ids(data: Buffer) -> tuple[npt.NDArray[np.int64], int, int] | None: ...
def token_indices(ids: npt.NDArray[np.int64], token: int) -> list[int]: ...
def first_unwrapped(
    ids: npt.NDArray[np.int64], at: list[int], before: int, after: int
) -> int | None: ...
def expand_repeats(
    ids: npt.NDArray[np.int64], at: list[int], token: int, counts: list[int]
) -> tuple[npt.NDArray[np.int64], list[tuple[int, int]]] | None: ...
def mrope_positions(
    length: int, offsets: Sequence[tuple[int, int]], grids: Sequence[tuple[int, int, int]]
) -> tuple[npt.NDArray[np.int64], int] | None: ...
def hf_backend(backend: str, filter: str = "bicubic") -> tuple[str, str]: ...
def lut_into_slot(
    codes: npt.NDArray[np.uint8], luts: npt.NDArray[Any], out: npt.NDArray[Any], slot: int
) -> None: ...

class FeatureTable:
    def __init__(
        self,
        mean: tuple[float, ...],
        std: tuple[float, ...],
        rescale: float,
        arith: str,
        dtype: str,
        pad_sample: int | None = None,
    ) -> None: ...
    def values(self) -> npt.NDArray[Any]: ...
    def pad(self) -> npt.NDArray[Any] | None: ...

class FeatureRecipe:
    def __init__(
        self,
        writer: str,
        resample: str,
        pass_order: str = "pillow13",
        *,
        tile: int = 0,
        patch_size: int = 0,
        merge_size: int = 0,
        temporal_patch_size: int = 0,
    ) -> None: ...
    def run(
        self,
        image: npt.NDArray[np.uint8],
        parts: Sequence[tuple[Any, ...]],
        table: FeatureTable,
        codes: bool = False,
        threads: int = 1,
        cancel: CancelFlag | None = None,
    ) -> npt.NDArray[Any]: ...
    def run_encoded(
        self,
        data: Buffer,
        size: tuple[int, int],
        parts: Sequence[tuple[Any, ...]],
        table: FeatureTable,
        codes: bool = False,
        threads: int = 1,
        cancel: CancelFlag | None = None,
        *,
        alpha: str = "white",
        exif_orientation: bool = True,
        max_pixels: int | None = None,
        max_side: int | None = None,
    ) -> npt.NDArray[Any]: ...

class CancelFlag:
    def __init__(self) -> None: ...
    def set(self) -> None: ...
    @property
    def is_set(self) -> bool: ...
