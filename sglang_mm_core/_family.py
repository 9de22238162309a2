"""The plugin contract: what a model family provides. A family only *describes* its data (one
item's pixels, the prompt layout, the positions); the driver runs the request."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from ._carriers import Geometry, ProcessedItem
from ._layout import TokenLayout
from ._positions import MRope, Rope1D


class DecodeDefaults(BaseModel):
    """A family's reference decode behaviour, used where the spec's ``decode`` is silent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: Literal["white", "drop"] = "white"
    exif_orientation: bool = True


class FamilyParams(BaseModel):
    """Base of every family's ``Params``: unknown fields are rejected, values are frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")


#: ``(width, height)`` of the images the conformance suite generates by default: 1x1, odd sizes,
#: aspect ratios up to 200:1 both ways, and a large photo-sized one.
DEFAULT_CONFORMANCE_SIZES: tuple[tuple[int, int], ...] = (
    (1, 1),
    (2, 1),
    (1, 3),
    (7, 5),
    (33, 17),
    (200, 1),
    (1, 200),
    (641, 479),
    (2048, 1536),
)


class Family(ABC):
    """Subclass per model family; instances are built by the pipeline from validated params and
    must be safe to call from many threads at once (kernels are pure and release the GIL)."""

    name: ClassVar[str]
    Params: ClassVar[type[FamilyParams]]
    capabilities: ClassVar[frozenset[str]] = frozenset({"image"})
    decode_defaults: ClassVar[DecodeDefaults] = DecodeDefaults()
    requires_images: ClassVar[bool] = False
    #: Image sizes ``(width, height)`` the conformance suite must process successfully; narrow
    #: it when the family refuses some sizes by design (e.g. an aspect-ratio limit).
    conformance_sizes: ClassVar[tuple[tuple[int, int], ...]] = DEFAULT_CONFORMANCE_SIZES
    #: Sizes the family refuses by design; the suite checks each fails with an `MmRequestError`.
    conformance_rejected_sizes: ClassVar[tuple[tuple[int, int], ...]] = ()

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

    def prompt_tokens_for_dimensions(self, width: int, height: int) -> int:
        """Tokens the item's placeholder expands to, wrapper tokens included (an `Explicit`
        pattern's full length); the same as `tokens_for_dimensions` for `Repeat` layouts.
        `Pipeline.count_tokens` adds these up to give the prompt length without decoding."""
        return self.tokens_for_dimensions(width, height)

    def example_prompt(self, n_images: int) -> list[int]:
        """A minimal valid prompt for ``n_images`` images: text ids around one placeholder per
        image. The conformance suite and the demos build requests with it. The default uses
        ``params.image_token_id``; override it when the layout needs more (start/end markers)."""
        token = getattr(self.params, "image_token_id", None)
        if not isinstance(token, int):
            raise NotImplementedError(
                f"family {self.name!r} has no params.image_token_id: override example_prompt"
            )
        text = 1 if token != 1 else 2
        return [text, text] + [tok for _ in range(n_images) for tok in (token, text)]

    @classmethod
    def spec_from_hf(
        cls, preprocessor_config: dict[str, Any], config: dict[str, Any]
    ) -> dict[str, Any]:
        """A spec document for a HuggingFace model's configs; refuses what it cannot match."""
        raise NotImplementedError(f"family {cls.name!r} has no spec_from_hf")


__all__ = ["DEFAULT_CONFORMANCE_SIZES", "DecodeDefaults", "Family", "FamilyParams"]
