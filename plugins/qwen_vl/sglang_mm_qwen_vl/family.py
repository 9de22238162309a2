"""The `qwen_vl` family: Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 images, bit-exact with
HuggingFace's image processor (either backend), its placeholder expansion and its MRoPE."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core.plugin import (
    CompactTensor,
    DecodeDefaults,
    Family,
    FamilyParams,
    Geometry,
    LayoutError,
    MRope,
    ProcessedItem,
    Tensor,
    TokenLayout,
    as_rgb,
    deprecated_aliases,
    layout_by_placeholder,
    mrope_positions,
    placeholder_indices,
)

from . import _native
from .params import QwenVLParams


class QwenVLFamily(Family):
    """One family for every Qwen-VL generation; the generations differ only in params."""

    name: ClassVar[str] = "qwen_vl"
    Params: ClassVar[type[FamilyParams]] = QwenVLParams
    capabilities: ClassVar[frozenset[str]] = frozenset({"image"})
    # HF's processor on a PIL image: convert_to_rgb composites alpha on white; load_image applies
    # the EXIF orientation (docs/families/qwen_vl.md: paths and URLs drop alpha in HF instead).
    decode_defaults: ClassVar[DecodeDefaults] = DecodeDefaults(alpha="white", exif_orientation=True)
    requires_images: ClassVar[bool] = False
    # Normalize is a per-channel table on the resized uint8 pixels, in both resamplers.
    offers_compact: ClassVar[bool] = True

    def __init__(self, params: FamilyParams | dict[str, Any] | None = None) -> None:
        super().__init__(params)
        assert isinstance(self.params, QwenVLParams)
        self.p = params = self.params
        self._kernel = _native.Processor(
            patch_size=params.patch_size,
            merge_size=params.merge_size,
            temporal_patch_size=params.temporal_patch_size,
            min_pixels=params.min_pixels,
            max_pixels=params.max_pixels,
            image_mean=params.image_mean,
            image_std=params.image_std,
            resample=params.resample,
            smart_resize=params.smart_resize,
            pil_pass_order=params.pil_pass_order,
        )
        self._table = self._kernel.table()

    def rejected_conformance_sizes(self) -> tuple[tuple[int, int], ...]:
        """Aspect ratio 200 is the largest HF accepts, whatever the params; 201 is refused (a
        typed request error)."""
        return ((201, 1), (1, 201))

    # -- pixels -------------------------------------------------------------------------------

    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> ProcessedItem:
        values, (gh, gw), (h, w) = self._kernel.process(as_rgb(image), threads)
        grid = np.array([[1, gh, gw]], dtype=np.int64)
        return ProcessedItem(
            feature=Tensor(values, "float32"),
            aux={"image_grid_thw": Tensor(grid, "int64")},
            geometry=Geometry(h, w, (1, gh, gw)),
        )

    def process_item_compact(
        self, image: npt.NDArray[np.uint8], *, threads: int = 1
    ) -> ProcessedItem:
        """`process_item` with the feature as codes ``[gh*gw, 3, 1, ps, ps]`` (frames once)
        plus the float32 normalize table, straight from the kernel."""
        codes, (gh, gw), (h, w) = self._kernel.process_compact(as_rgb(image), threads)
        p = self.p
        ps, tps = p.patch_size, p.temporal_patch_size
        rows = gh * gw
        feature = CompactTensor(
            codes=codes.reshape(rows, 3, 1, ps, ps),
            luts=self._table,
            dtype="float32",
            shape=(rows, 3 * tps * ps * ps),
            channel_axis=1,
            repeat_axis=2,
            repeats=tps,
        )
        grid = np.array([[1, gh, gw]], dtype=np.int64)
        return ProcessedItem(
            feature=feature,
            aux={"image_grid_thw": Tensor(grid, "int64")},
            geometry=Geometry(h, w, (1, gh, gw)),
        )

    # -- tokens -------------------------------------------------------------------------------

    def tokens_for(self, geometry: Geometry) -> int:
        t, gh, gw = geometry.grid
        return t * gh * gw // (self.p.merge_size**2)

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        h, w = self._kernel.target_size(height, width)
        ps = self.p.patch_size
        return (h // ps) * (w // ps) // (self.p.merge_size**2)

    def example_prompt(self, n_images: int) -> list[int]:
        """Text ids around ``vision_start, image, vision_end`` per image (the strict layout)."""
        p = self.p
        used = {p.image_token_id, p.vision_start_token_id, p.vision_end_token_id}
        text = next(t for t in range(1, 5) if t not in used)
        marked = (p.vision_start_token_id, p.image_token_id, p.vision_end_token_id, text)
        return [text, text] + [tok for _ in range(n_images) for tok in marked]

    def layout(
        self, input_ids: npt.NDArray[np.int64], geometries: Sequence[Geometry]
    ) -> TokenLayout:
        p = self.p
        m2 = p.merge_size**2
        counts = [g.grid[0] * g.grid[1] * g.grid[2] // m2 for g in geometries]  # tokens_for
        markers = (p.vision_start_token_id, p.vision_end_token_id) if p.strict_layout else None
        try:
            return layout_by_placeholder(input_ids, p.image_token_id, counts, between=markers)
        except LayoutError:
            if markers is not None:  # say which marker is missing, in this family's terms
                self._check_markers(np.asarray(input_ids, dtype=np.int64))
            raise

    def check_prompt(self, input_ids: npt.NDArray[np.int64], n_items: int) -> None:
        """The checks of `layout` that need no geometry, so counting refuses what processing
        refuses: one placeholder per image and, under ``strict_layout``, its markers."""
        super().check_prompt(input_ids, n_items)
        if self.p.strict_layout:
            self._check_markers(np.asarray(input_ids, dtype=np.int64))

    def _check_markers(self, ids: npt.NDArray[np.int64]) -> None:
        """Each placeholder must be exactly ``vision_start, image, vision_end``. A loop over
        the placeholders (one per image, at most ``limits.max_items``), not a dozen numpy
        calls: this runs under the GIL on every request."""
        p = self.p
        last = len(ids) - 1
        start, end = p.vision_start_token_id, p.vision_end_token_id
        for k, i in enumerate(placeholder_indices(ids, p.image_token_id)):
            if i == 0 or i == last or ids[i - 1] != start or ids[i + 1] != end:
                raise LayoutError(
                    f"image placeholder {k} (token {i}, id {p.image_token_id}) is not "
                    f"between vision_start_token_id {start} and "
                    f"vision_end_token_id {end}"
                )

    def positions(
        self,
        length: int,
        offsets: Sequence[tuple[int, int]],
        geometries: Sequence[Geometry],
        input_ids: npt.NDArray[np.int64],
    ) -> MRope:
        m = self.p.merge_size
        grids = [(g.grid[0], g.grid[1] // m, g.grid[2] // m) for g in geometries]
        return mrope_positions(length, offsets, grids)

    # -- configuration ------------------------------------------------------------------------

    @classmethod
    def spec_from_hf(
        cls,
        preprocessor_config: dict[str, Any] | str | Path,
        config: dict[str, Any] | None = None,
        *,
        resample: str = "aten_u8",
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory, or its two parsed config files."""
        from .hf import spec_from_hf

        return spec_from_hf(preprocessor_config, config, resample=resample)


# `QwenVL` was this class's name before the family and params names were made consistent.
if not TYPE_CHECKING:  # runtime only: type checkers report the old names as missing
    __getattr__ = deprecated_aliases(
        __name__, {"QwenVL": ("sglang_mm_qwen_vl.QwenVLFamily", QwenVLFamily)}
    )

__all__ = ["QwenVLFamily"]
