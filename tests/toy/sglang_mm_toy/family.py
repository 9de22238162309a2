"""Two toy families. ``toy``: per-patch channel means, one token per patch, each image wrapped
as ``<start> <img>*n <end>`` (an `Explicit` layout whose content range excludes the wrappers),
plain RoPE. ``toy_mrope``: 2x2-merged patches (four feature rows per token), a `Repeat` layout
and Qwen-style MRoPE; it needs at least one image."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from pydantic import Field

from sglang_mm_core import (
    DecodeDefaults,
    Explicit,
    Family,
    FamilyParams,
    Geometry,
    KernelArgumentError,
    MRope,
    ProcessedItem,
    Repeat,
    Rope1D,
    Tensor,
    TokenLayout,
    layout_by_placeholder_patterns,
    mrope_positions,
)

MAX_ASPECT = 250


class ToyParams(FamilyParams):
    patch: int = Field(8, gt=0, description="Patch side in pixels.")
    image_token_id: int = Field(5, ge=0)
    start_id: int = Field(3, ge=0)
    end_id: int = Field(4, ge=0)


def patch_means(image: npt.NDArray[np.uint8], patch: int) -> npt.NDArray[np.float32]:
    """Mean of each channel over each ``patch`` x ``patch`` cell (zero padding), row-major."""
    h, w, _ = image.shape
    gh, gw = -(-h // patch), -(-w // patch)
    padded = np.zeros((gh * patch, gw * patch, 3), dtype=np.uint32)
    padded[:h, :w] = image
    sums = padded.reshape(gh, patch, gw, patch, 3).sum(axis=(1, 3), dtype=np.uint32)
    return sums.reshape(gh * gw, 3).astype(np.float32) / np.float32(patch * patch * 255)


class ToyFamily(Family):
    name = "toy"
    Params = ToyParams
    decode_defaults = DecodeDefaults(alpha="white", exif_orientation=True)

    params: ToyParams

    def rejected_conformance_sizes(self) -> tuple[tuple[int, int], ...]:
        return ((MAX_ASPECT + 1, 1), (1, MAX_ASPECT + 1))

    def _grid(self, width: int, height: int) -> tuple[int, int]:
        if max(width, height) > MAX_ASPECT * min(width, height):
            raise KernelArgumentError(f"aspect ratio of {width}x{height} is over {MAX_ASPECT}")
        p = self.params.patch
        return -(-height // p), -(-width // p)

    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> ProcessedItem:
        h, w, _ = image.shape
        gh, gw = self._grid(w, h)
        feature = patch_means(image, self.params.patch)
        grid = np.array([gh, gw], dtype=np.int64)
        return ProcessedItem(
            Tensor.of(feature), {"grid": Tensor.of(grid)}, Geometry(h, w, (gh, gw))
        )

    def _pattern(self, tokens: int) -> Explicit:
        p = self.params
        ids = (p.start_id, *([p.image_token_id] * tokens), p.end_id)
        return Explicit(ids, content=(1, tokens + 1))

    def layout(
        self, input_ids: npt.NDArray[np.int64], geometries: Sequence[Geometry]
    ) -> TokenLayout:
        patterns = [self._pattern(self.tokens_for(g)) for g in geometries]
        return layout_by_placeholder_patterns(input_ids, self.params.image_token_id, patterns)

    def tokens_for(self, geometry: Geometry) -> int:
        gh, gw = geometry.grid
        return gh * gw

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        gh, gw = self._grid(width, height)
        return gh * gw

    def prompt_tokens_for_dimensions(self, width: int, height: int) -> int:
        return self.tokens_for_dimensions(width, height) + 2


class ToyMRopeFamily(Family):
    name = "toy_mrope"
    Params = ToyParams
    decode_defaults = DecodeDefaults(alpha="drop", exif_orientation=False)
    requires_images = True

    params: ToyParams

    def _grid(self, width: int, height: int) -> tuple[int, int]:
        cell = 2 * self.params.patch
        return 2 * -(-height // cell), 2 * -(-width // cell)

    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> ProcessedItem:
        h, w, _ = image.shape
        gh, gw = self._grid(w, h)
        p = self.params.patch
        padded = np.zeros((gh * p, gw * p, 3), dtype=np.uint8)
        padded[:h, :w] = image
        means = patch_means(padded, p).reshape(gh // 2, 2, gw // 2, 2, 3)
        feature = np.ascontiguousarray(means.transpose(0, 2, 1, 3, 4)).reshape(gh * gw, 3)
        thw = np.array([[1, gh, gw]], dtype=np.int64)
        return ProcessedItem(
            Tensor.of(feature), {"image_grid_thw": Tensor.of(thw)}, Geometry(h, w, (1, gh, gw))
        )

    def layout(
        self, input_ids: npt.NDArray[np.int64], geometries: Sequence[Geometry]
    ) -> TokenLayout:
        tok = self.params.image_token_id
        patterns = [Repeat(tok, self.tokens_for(g)) for g in geometries]
        return layout_by_placeholder_patterns(input_ids, tok, patterns)

    def positions(
        self,
        length: int,
        offsets: Sequence[tuple[int, int]],
        geometries: Sequence[Geometry],
        input_ids: npt.NDArray[np.int64],
    ) -> Rope1D | MRope:
        grids = [(1, g.grid[1] // 2, g.grid[2] // 2) for g in geometries]
        return mrope_positions(length, offsets, grids)

    def tokens_for(self, geometry: Geometry) -> int:
        _, gh, gw = geometry.grid
        return gh * gw // 4

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        gh, gw = self._grid(width, height)
        return gh * gw // 4
