"""Stub of the Rust extension `sglang_mm_qwen_vl._native` (plugins/qwen_vl/rust)."""

import numpy as np
import numpy.typing as npt

__version__: str

class Processor:
    def __init__(
        self,
        *,
        patch_size: int,
        merge_size: int,
        temporal_patch_size: int,
        min_pixels: int,
        max_pixels: int,
        image_mean: tuple[float, float, float],
        image_std: tuple[float, float, float],
        resample: str,
        smart_resize: str,
        pil_pass_order: str,
    ) -> None: ...
    def process(
        self, image: npt.NDArray[np.uint8], threads: int = 1
    ) -> tuple[npt.NDArray[np.float32], tuple[int, int], tuple[int, int]]:
        """``(pixel_values, (grid_h, grid_w), (height', width'))``; releases the GIL."""
    def process_compact(
        self, image: npt.NDArray[np.uint8], threads: int = 1
    ) -> tuple[npt.NDArray[np.uint8], tuple[int, int], tuple[int, int]]:
        """``(codes [gh*gw, 3*ps*ps], (grid_h, grid_w), (height', width'))``."""
    def table(self) -> npt.NDArray[np.float32]: ...
    def target_size(self, height: int, width: int) -> tuple[int, int]: ...

def smart_resize(
    height: int, width: int, factor: int, min_pixels: int, max_pixels: int, variant: str = "hf"
) -> tuple[int, int]: ...
