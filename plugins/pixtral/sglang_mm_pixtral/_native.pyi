"""Stub of the Rust extension `sglang_mm_pixtral._native` (plugins/pixtral/rust)."""

import numpy as np
import numpy.typing as npt

__version__: str

def process(
    image: npt.NDArray[np.uint8],
    height: int,
    width: int,
    image_mean: tuple[float, float, float],
    image_std: tuple[float, float, float],
    resample: str,
    threads: int = 1,
) -> npt.NDArray[np.float32]:
    """float32 ``[3, height, width]``; releases the GIL."""

def process_compact(
    image: npt.NDArray[np.uint8], height: int, width: int, resample: str, threads: int = 1
) -> npt.NDArray[np.uint8]:
    """uint8 codes ``[3, height, width]`` (values ``normalize_table()[c][code]``)."""

def normalize_table(
    image_mean: tuple[float, float, float], image_std: tuple[float, float, float], resample: str
) -> npt.NDArray[np.float32]:
    """float32 ``[3, 256]``."""
