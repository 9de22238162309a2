"""The plugin contract: what a model family provides. A family only *describes* its data (one
item's pixels, the prompt layout, the positions); the driver runs the request."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from .carriers import Geometry, ProcessedItem
from .layout import TokenLayout
from .positions import MRope, Rope1D


class DecodeDefaults(BaseModel):
    """A family's reference decode behaviour, used where the spec's ``decode`` is silent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: Literal["white", "drop"] = "white"
    exif_orientation: bool = True


class FamilyParams(BaseModel):
    """Base of every family's ``Params``: unknown fields are rejected, values are frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Family(ABC):
    """Subclass per model family; instances are built by the pipeline from validated params and
    must be safe to call from many threads at once (kernels are pure and release the GIL)."""

    name: ClassVar[str]
    Params: ClassVar[type[FamilyParams]]
    capabilities: ClassVar[frozenset[str]] = frozenset({"image"})
    decode_defaults: ClassVar[DecodeDefaults] = DecodeDefaults()
    requires_images: ClassVar[bool] = False

    def __init__(self, params: FamilyParams) -> None:
        self.params = params

    @abstractmethod
    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> ProcessedItem:
        """One decoded RGB uint8 ``[h, w, 3]`` image in, its feature, aux and geometry out.

        ``threads`` is the kernel's own row-parallel budget, granted by the driver's `par` seam
        (1 when the driver already fans out over items); the result must not depend on it."""

    @abstractmethod
    def layout(
        self, input_ids: npt.NDArray[np.int64], geometries: Sequence[Geometry]
    ) -> TokenLayout:
        """How the prompt expands around the items."""

    def positions(
        self,
        length: int,
        offsets: Sequence[tuple[int, int]],
        geometries: Sequence[Geometry],
        input_ids: npt.NDArray[np.int64],
    ) -> Rope1D | MRope:
        """Position ids of the expanded prompt; plain RoPE unless the family overrides it."""
        return Rope1D(length)

    @abstractmethod
    def tokens_for(self, geometry: Geometry) -> int:
        """Tokens one item takes in the expanded prompt."""

    @abstractmethod
    def tokens_for_dimensions(self, width: int, height: int) -> int:
        """Tokens an image of this (upright) size would take, without decoding it."""

    @classmethod
    def spec_from_hf(
        cls, preprocessor_config: dict[str, Any], config: dict[str, Any]
    ) -> dict[str, Any]:
        """A spec document for a HuggingFace model's configs; refuses what it cannot match."""
        raise NotImplementedError(f"family {cls.name!r} has no spec_from_hf")


__all__ = ["DecodeDefaults", "Family", "FamilyParams"]
