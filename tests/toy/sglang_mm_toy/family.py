"""Two toy families with kernels of their own (numpy, no table, so no compact form): a
family the core cannot compose still only describes its plan and its feature. ``toy``:
per-patch channel means, one token per patch, each image wrapped as ``<start> <img>*n <end>``
(an `Explicit` pattern whose content range excludes the wrappers), plain RoPE. ``toy_mrope``:
2x2-merged patches (four feature rows per token), a `Repeat` pattern and Qwen-style MRoPE; it
needs at least one image."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field

from sglang_mm_core.plugin import (
    DecodeDefaults,
    Explicit,
    Family,
    FamilyParams,
    Features,
    Geometry,
    KernelArgumentError,
    MRope,
    Plan,
    Repeat,
    Rope1D,
    Tensor,
    Writer,
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


@dataclass(frozen=True)
class MeansPerToken(Writer):
    """A writer of the toys' own layout: ``rows_per_token`` rows of 3 means per token."""

    rows_per_token: int = 1
    kind: ClassVar[str] = "toy_means"

    def shape(self, plan: Plan) -> tuple[int, ...]:
        n = plan.tokens.count if isinstance(plan.tokens, Repeat) else plan.content
        return (n * self.rows_per_token, 3)


class ToyFamily(Family[ToyParams]):
    name = "toy"
    decode_defaults = DecodeDefaults(alpha="white", exif_orientation=True)

    def rejected_conformance_sizes(self) -> tuple[tuple[int, int], ...]:
        return ((MAX_ASPECT + 1, 1), (1, MAX_ASPECT + 1))

    def plan(self, width: int, height: int) -> Plan:
        if max(width, height) > MAX_ASPECT * min(width, height):
            raise KernelArgumentError(f"aspect ratio of {width}x{height} is over {MAX_ASPECT}")
        p = self.params
        gh, gw = -(-height // p.patch), -(-width // p.patch)
        n = gh * gw
        ids = (p.start_id, *([p.image_token_id] * n), p.end_id)
        return Plan(Explicit(ids, content=(1, n + 1)), Geometry(height, width, (gh, gw)))

    def features(self) -> Features:
        return Features(table=None, writer=MeansPerToken())

    def kernel(
        self, image: npt.NDArray[np.uint8], plan: Plan, *, codes: bool, threads: int
    ) -> npt.NDArray[Any]:
        return patch_means(image, self.params.patch)

    def aux(self, plan: Plan) -> Mapping[str, Tensor]:
        return {"grid": Tensor.of(np.array(plan.geometry.grid, dtype=np.int64))}


class ToyMRopeFamily(Family[ToyParams]):
    name = "toy_mrope"
    decode_defaults = DecodeDefaults(alpha="drop", exif_orientation=False)
    requires_images = True

    def plan(self, width: int, height: int) -> Plan:
        cell = 2 * self.params.patch
        gh, gw = 2 * -(-height // cell), 2 * -(-width // cell)
        tokens = Repeat(self.params.image_token_id, gh * gw // 4)
        return Plan(tokens, Geometry(height, width, (1, gh, gw)))

    def features(self) -> Features:
        return Features(table=None, writer=MeansPerToken(rows_per_token=4))

    def kernel(
        self, image: npt.NDArray[np.uint8], plan: Plan, *, codes: bool, threads: int
    ) -> npt.NDArray[Any]:
        h, w, _ = image.shape
        _, gh, gw = plan.geometry.grid
        p = self.params.patch
        padded = np.zeros((gh * p, gw * p, 3), dtype=np.uint8)
        padded[:h, :w] = image
        means = patch_means(padded, p).reshape(gh // 2, 2, gw // 2, 2, 3)
        return np.ascontiguousarray(means.transpose(0, 2, 1, 3, 4)).reshape(gh * gw, 3)

    def aux(self, plan: Plan) -> Mapping[str, Tensor]:
        return {"image_grid_thw": Tensor.of(np.array([plan.geometry.grid], dtype=np.int64))}

    def positions(
        self,
        length: int,
        offsets: Sequence[tuple[int, int]],
        geometries: Sequence[Geometry],
        input_ids: npt.NDArray[np.int64],
    ) -> Rope1D | MRope:
        grids = [(1, g.grid[1] // 2, g.grid[2] // 2) for g in geometries]
        return mrope_positions(length, offsets, grids)
