"""Stub of the Rust extension `sglang_mm_internvl._native` (plugins/internvl/rust)."""

import numpy as np
import numpy.typing as npt

__version__: str

class Processor:
    def __init__(
        self,
        *,
        tile_size: int,
        image_mean: tuple[float, float, float],
        image_std: tuple[float, float, float],
        resample: str,
        pil_pass_order: str,
    ) -> None: ...
    def process(
        self,
        image: npt.NDArray[np.uint8],
        cols: int,
        rows: int,
        thumbnail: bool,
        threads: int = 1,
    ) -> npt.NDArray[np.float32]:
        """``pixel_values [cols * rows + thumbnail, 3, T, T]``; releases the GIL."""
    def process_compact(
        self,
        image: npt.NDArray[np.uint8],
        cols: int,
        rows: int,
        thumbnail: bool,
        threads: int = 1,
    ) -> npt.NDArray[np.uint8]:
        """uint8 codes ``[cols * rows + thumbnail, 3, T, T]`` (values ``table()[c][code]``)."""
    def table(self) -> npt.NDArray[np.float32]:
        """The normalize table ``[3, 256]``: ``table[c, v]`` for sample ``v`` of channel ``c``."""
