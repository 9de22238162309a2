"""The plugin contract: what a model family provides. A family only *describes* its data (one
item's pixels, the prompt layout, the positions); the driver runs the request."""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from ._carriers import Geometry, ProcessedItem
from ._layout import TokenLayout
from ._positions import MRope, Rope1D
from .errors import LayoutError


class DecodeDefaults(BaseModel):
    """A family's reference decode behaviour, used where the spec's ``decode`` is silent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: Literal["white", "drop"] = "white"
    exif_orientation: bool = True


class FamilyParams(BaseModel):
    """Base of every family's ``Params``: unknown fields are rejected, values are frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")


#: An image size ``(width, height)``, as the conformance hooks list them.
Size: TypeAlias = tuple[int, int]

#: A feature shape as a family states it: an exact size per axis, ``None`` for any size.
FeatureShape: TypeAlias = tuple[int | None, ...]

#: ``(width, height)`` of the images the conformance suite generates by default: 1x1, odd sizes,
#: aspect ratios up to 200:1 both ways, and a large photo-sized one.
DEFAULT_CONFORMANCE_SIZES: tuple[Size, ...] = (
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
    #: Image sizes ``(width, height)`` the conformance suite must process successfully (what
    #: `accepted_conformance_sizes` returns unless overridden); narrow it when the family
    #: refuses some sizes by design (e.g. an aspect-ratio limit).
    conformance_sizes: ClassVar[tuple[Size, ...]] = DEFAULT_CONFORMANCE_SIZES
    #: Deprecated (it cannot follow the params; removed after one release): override
    #: `rejected_conformance_sizes` instead. Still honoured, with a `DeprecationWarning`.
    conformance_rejected_sizes: ClassVar[tuple[Size, ...]] = ()
    #: Whether `process_item_compact` gives the compact form (uint8 codes plus per-channel
    #: tables, `CompactTensor`). Only a family whose feature is exactly a table of uint8
    #: pixels may say yes: there is no approximate compact form.
    offers_compact: ClassVar[bool] = False

    def __init__(self, params: FamilyParams | Mapping[str, Any] | None = None) -> None:
        """Keep ``params`` as this family's `Params`: an instance as it is; another
        `FamilyParams` or a mapping validated (None: the defaults), so that a family built by
        hand gets the checks of one built from a spec."""
        cls = type(self).Params
        if not isinstance(params, cls):
            raw = params.model_dump() if isinstance(params, FamilyParams) else dict(params or {})
            params = cls.model_validate(raw)
        self.params = params

    @abstractmethod
    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> ProcessedItem:
        """One decoded RGB uint8 ``[h, w, 3]`` image in, its feature, aux and geometry out.

        ``threads`` is the kernel's own row-parallel budget, granted by the driver's `par` seam
        (1 when the driver already fans out over items); the result must not depend on it."""

    def process_item_compact(
        self, image: npt.NDArray[np.uint8], *, threads: int = 1
    ) -> ProcessedItem:
        """`process_item` with the feature as a `CompactTensor` whose ``expand()`` is bit for
        bit the feature `process_item` returns; implement it (and set `offers_compact`) only
        when that holds for every image and every params."""
        raise NotImplementedError(f"family {self.name!r} does not offer the compact form")

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

    def check_prompt(self, input_ids: npt.NDArray[np.int64], n_items: int) -> None:
        """Refuse, with a `LayoutError`, a prompt that `layout` would refuse for ``n_items``
        images, before any image is decoded: `sglang-mm tokens` counts only what `run` would
        process. The default applies `layout_by_placeholder`'s rule to
        ``params.image_token_id`` (one placeholder per image); override it when the layout
        checks more (markers, tiles) or the placeholder is not ``image_token_id``."""
        token = getattr(self.params, "image_token_id", None)
        if not isinstance(token, int):
            return
        found = int(np.count_nonzero(np.asarray(input_ids) == token))
        if found != n_items:
            raise LayoutError(
                f"prompt has {found} media placeholder(s) but {n_items} media item(s)"
            )

    def expected_feature_shape(self, geometry: Geometry) -> FeatureShape | None:
        """The shape an item of ``geometry`` must give its feature, ``None`` per axis of any
        size; the conformance suite checks every image against it. ``None`` (the default)
        keeps the generic rule for token-major features: the leading axis is a whole multiple
        of `tokens_for`, the same multiple for every image. Override it when the feature is
        not token-major, e.g. a CHW ``pixel_values`` ``(3, 336, 336)`` for 576 tokens."""
        return None

    def accepted_conformance_sizes(self) -> tuple[Size, ...]:
        """Image sizes ``(width, height)`` the conformance suite must see processed under
        these params; the class attribute `conformance_sizes` by default."""
        return type(self).conformance_sizes

    def rejected_conformance_sizes(self) -> tuple[Size, ...]:
        """Image sizes these params refuse by design; the conformance suite checks each fails
        with an `MmRequestError`, not a crash. Read ``self.params`` when the limit is a param.
        The default is none (or the deprecated class attribute `conformance_rejected_sizes`)."""
        legacy = type(self).conformance_rejected_sizes
        if legacy:
            warnings.warn(
                f"{type(self).__qualname__}.conformance_rejected_sizes (a class attribute) is "
                "deprecated and will be removed after one release: override the method "
                "rejected_conformance_sizes(self) instead",
                DeprecationWarning,
                stacklevel=2,
            )
        return tuple(legacy)

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

    @classmethod
    def spec_from_model_dir(cls, directory: Path) -> dict[str, Any]:
        """A spec document for a HuggingFace model directory (what ``sglang-mm spec-from-hf``
        asks). The default maps its two configs with `spec_from_hf`; a family that reads
        further files (a tokenizer's special ids, ``processor_config.json``) overrides it."""
        from ._hf import load_model_dir

        preprocessor_config, config = load_model_dir(directory)
        return cls.spec_from_hf(preprocessor_config, config)


__all__ = [
    "DEFAULT_CONFORMANCE_SIZES",
    "DecodeDefaults",
    "Family",
    "FamilyParams",
    "FeatureShape",
    "Size",
]
