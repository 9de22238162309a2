"""The `internvl` family: InternVL 3 and 3.5 images as tiles (an aspect-ratio grid plus a
thumbnail), bit-exact with HuggingFace's GotOcr2 image processor (either backend) or the model
card's ``load_image``, and ``InternVLProcessor``'s ``<img>`` + context tokens + ``</img>``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core.plugin import (
    CompactTensor,
    DecodeDefaults,
    Explicit,
    Family,
    FamilyParams,
    FeatureShape,
    Geometry,
    KernelArgumentError,
    ProcessedItem,
    Tensor,
    TokenLayout,
    as_rgb,
    layout_by_placeholder_patterns,
)

from . import _native
from .params import InternVLParams
from .tiling import Tiling, tiling


class InternVLFamily(Family):
    """One family for InternVL 3 and 3.5; the generations differ only in token ids."""

    name: ClassVar[str] = "internvl"
    Params: ClassVar[type[FamilyParams]] = InternVLParams
    capabilities: ClassVar[frozenset[str]] = frozenset({"image"})
    # HF's processor on a PIL image: convert_to_rgb composites alpha on white, load_image applies
    # the EXIF orientation. The model card's load_image does neither (Image.open().convert("RGB")
    # drops alpha): its specs set decode {"alpha": "drop", "exif_orientation": false}.
    decode_defaults: ClassVar[DecodeDefaults] = DecodeDefaults(alpha="white", exif_orientation=True)
    requires_images: ClassVar[bool] = False
    # Both backends resize to uint8 tiles, then rescale + normalize each sample on its own: a
    # per-channel table on uint8, so the compact form is exact.
    offers_compact: ClassVar[bool] = True

    def __init__(self, params: FamilyParams | dict[str, Any] | None = None) -> None:
        super().__init__(params)
        assert isinstance(self.params, InternVLParams)
        self.p = params = self.params
        self._kernel = _native.Processor(
            tile_size=params.tile_size,
            image_mean=params.image_mean,
            image_std=params.image_std,
            resample=params.resample,
            pil_pass_order=params.pil_pass_order,
        )
        self._table = self._kernel.table()

    # -- tiles --------------------------------------------------------------------------------

    def tiling(self, width: int, height: int) -> Tiling:
        """The tiles a ``width x height`` image becomes (the grid choice of the reference)."""
        if width <= 0 or height <= 0:
            raise KernelArgumentError(f"image {width}x{height} has a zero side")
        p = self.p
        return tiling(
            width,
            height,
            tile=p.tile_size,
            crop_to_patches=p.crop_to_patches,
            min_patches=p.min_patches,
            max_patches=p.max_patches,
            rule=p.tiling,
        )

    def normalize_table(self) -> npt.NDArray[np.float32]:
        """``[3, 256]``: the float32 every uint8 sample of each channel becomes (the values are
        a function of the resized uint8 pixels only, so a compact uint8 form can carry them)."""
        return self._table.copy()

    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> ProcessedItem:
        rgb = as_rgb(image)
        t = self.tiling(int(rgb.shape[1]), int(rgb.shape[0]))
        values = self._kernel.process(rgb, t.cols, t.rows, t.thumbnail, threads)
        return self._item(Tensor(values, "float32"), t)

    def process_item_compact(
        self, image: npt.NDArray[np.uint8], *, threads: int = 1
    ) -> ProcessedItem:
        """`process_item` with the feature as codes ``[tiles, 3, 1, T, T]`` plus the float32
        normalize table, straight from the kernel (the tiles are never normalized here)."""
        rgb = as_rgb(image)
        t = self.tiling(int(rgb.shape[1]), int(rgb.shape[0]))
        codes = self._kernel.process_compact(rgb, t.cols, t.rows, t.thumbnail, threads)
        n, _, size, _ = codes.shape
        feature = CompactTensor(
            codes=codes.reshape(n, 3, 1, size, size),
            luts=self._table,
            dtype="float32",
            shape=(n, 3, size, size),
            channel_axis=1,
            repeat_axis=2,
            repeats=1,
        )
        return self._item(feature, t)

    def _item(self, feature: Tensor | CompactTensor, t: Tiling) -> ProcessedItem:
        size = self.p.tile_size
        return ProcessedItem(
            feature=feature,
            aux={"num_patches": Tensor(np.array([t.tiles], dtype=np.int64), "int64")},
            geometry=Geometry(
                t.rows * size, t.cols * size, (t.rows, t.cols, int(t.thumbnail), size)
            ),
        )

    def expected_feature_shape(self, geometry: Geometry) -> FeatureShape:
        rows, cols, thumb, size = geometry.grid
        return (rows * cols + thumb, 3, size, size)

    # -- tokens -------------------------------------------------------------------------------

    def tokens_for(self, geometry: Geometry) -> int:
        rows, cols, thumb, _ = geometry.grid
        return self.p.image_seq_length * (rows * cols + thumb)

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        return self.p.image_seq_length * self.tiling(width, height).tiles

    def prompt_tokens_for_dimensions(self, width: int, height: int) -> int:
        """The context tokens plus ``<img>`` and ``</img>``."""
        return self.tokens_for_dimensions(width, height) + 2

    def layout(
        self, input_ids: npt.NDArray[np.int64], geometries: Sequence[Geometry]
    ) -> TokenLayout:
        """Each ``<IMG_CONTEXT>`` placeholder becomes ``<img>``, the item's context tokens and
        ``</img>``; the item's offsets cover the context tokens only."""
        p = self.p
        patterns = []
        for g in geometries:
            n = self.tokens_for(g)
            ids = (p.start_image_token_id, *([p.image_token_id] * n), p.end_image_token_id)
            patterns.append(Explicit(ids, (1, n + 1)))
        return layout_by_placeholder_patterns(input_ids, p.image_token_id, patterns)

    # -- configuration ------------------------------------------------------------------------

    @classmethod
    def spec_from_hf(
        cls,
        preprocessor_config: dict[str, Any] | str | Path,
        config: dict[str, Any] | None = None,
        *,
        resample: str = "aten_u8",
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory, or its parsed config files."""
        from .hf import spec_from_hf

        return spec_from_hf(preprocessor_config, config, resample=resample)

    @classmethod
    def spec_from_model_dir(cls, directory: Path) -> dict[str, Any]:
        """The directory itself goes to `spec_from_hf`: its tokenizer files carry ids too."""
        from .hf import spec_from_hf

        return spec_from_hf(directory)


__all__ = ["InternVLFamily"]
