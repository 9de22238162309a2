"""The ``pixtral`` family: Pixtral-12B and Mistral 3 (``mistral3`` in transformers).

Each image is resized to fit ``longest_edge`` with sides in whole tokens, normalized with
CLIP's mean and std, and fed as its own ``[3, H, W]`` float32 (no padding: images of one request
differ in size). Its placeholder expands to rows of ``[IMG]`` x columns, each row closed by
``[IMG_BREAK]`` and the last by ``[IMG_END]``; the item's offsets span that whole sequence and
the aux ``content_mask`` marks the ``[IMG]`` positions the vision embeddings fill."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from . import _native
from .params import PixtralParams


def target_size(height: int, width: int, longest_edge: int, factor: int) -> tuple[int, int]:
    """HF's ``get_resize_output_image_size``: shrink by ``max(h, w) / longest_edge`` with
    ``floor`` (never enlarge), then round each side *up* to a whole multiple of ``factor``.
    ``(0, w)`` or ``(h, 0)`` when a side floors to nothing (HF then fails to resize)."""
    ratio = max(height / longest_edge, width / longest_edge)
    if ratio > 1:
        height = math.floor(height / ratio)
        width = math.floor(width / ratio)
    rows = (height - 1) // factor + 1
    cols = (width - 1) // factor + 1
    return rows * factor, cols * factor


def row_break_ids(rows: int, cols: int, img: int, brk: int, end: int) -> tuple[int, ...]:
    """``([img] * cols + [brk]) * rows`` with the very last id replaced by ``end``."""
    ids = ([img] * cols + [brk]) * rows
    ids[-1] = end
    return tuple(ids)


def content_mask(
    input_ids: npt.NDArray[np.int64], offsets: Sequence[tuple[int, int]], image_token_id: int
) -> npt.NDArray[np.bool_]:
    """Over an expanded prompt, True where a vision embedding goes: the ``[IMG]`` ids inside
    each item's (inclusive) offsets. The breaks and ends inside the span stay text tokens."""
    ids = np.asarray(input_ids)
    mask = np.zeros(len(ids), dtype=np.bool_)
    for a, b in offsets:
        mask[a : b + 1] = ids[a : b + 1] == image_token_id
    return mask


class PixtralFamily(mm.Family):
    name: ClassVar[str] = "pixtral"
    Params: ClassVar[type[mm.FamilyParams]] = PixtralParams
    # As HF's loaders (and mistral-common): alpha onto white, EXIF orientation applied.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )
    # Both backends resize uint8 pixels, then rescale + normalize each sample on its own: a
    # per-channel table on uint8, so the compact form is exact.
    offers_compact: ClassVar[bool] = True

    def __init__(self, params: mm.FamilyParams) -> None:
        super().__init__(params)
        assert isinstance(self.params, PixtralParams)
        self.p = params = self.params
        self._table = _native.normalize_table(params.image_mean, params.image_std, params.resample)

    # -- geometry ---------------------------------------------------------------------------
    def target_size(self, height: int, width: int) -> tuple[int, int]:
        """The resized ``(H, W)`` of an image, as HF computes it."""
        return target_size(height, width, self.p.longest_edge, self.p.factor)

    def _grid(self, width: int, height: int) -> tuple[int, int, int, int]:
        h, w = self.target_size(height, width)
        if h <= 0 or w <= 0:
            raise mm.KernelArgumentError(
                f"a {width}x{height} image shrinks to {w}x{h} pixels under longest_edge "
                f"{self.p.longest_edge} (aspect ratio above {self.p.longest_edge}:1); "
                "HF's Pixtral processor cannot resize it either"
            )
        return h, w, h // self.p.factor, w // self.p.factor

    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> mm.ProcessedItem:
        image = mm.as_rgb(image)
        h, w, rows, cols = self._grid(image.shape[1], image.shape[0])
        p = self.p
        values = _native.process(
            np.ascontiguousarray(image), h, w, p.image_mean, p.image_std, p.resample, threads
        )
        return self._item(mm.Tensor(values, "float32"), h, w, rows, cols)

    def process_item_compact(
        self, image: npt.NDArray[np.uint8], *, threads: int = 1
    ) -> mm.ProcessedItem:
        """`process_item` with the feature as codes ``[3, 1, H, W]`` plus the float32 normalize
        table, straight from the kernel."""
        image = mm.as_rgb(image)
        h, w, rows, cols = self._grid(image.shape[1], image.shape[0])
        codes = _native.process_compact(np.ascontiguousarray(image), h, w, self.p.resample, threads)
        feature = mm.CompactTensor(
            codes=codes.reshape(3, 1, h, w),
            luts=self._table,
            dtype="float32",
            shape=(3, h, w),
            channel_axis=0,
            repeat_axis=1,
            repeats=1,
        )
        return self._item(feature, h, w, rows, cols)

    def _item(
        self, feature: mm.Tensor | mm.CompactTensor, h: int, w: int, rows: int, cols: int
    ) -> mm.ProcessedItem:
        p = self.p
        ids = np.asarray(self._ids(rows, cols), dtype=np.int64)
        return mm.ProcessedItem(
            feature=feature,
            aux={
                "image_sizes": mm.Tensor(np.array([h, w], dtype=np.int64), "int64"),
                "content_mask": mm.Tensor((ids == p.image_token_id).astype(np.uint8), "uint8"),
            },
            geometry=mm.Geometry(h, w, (rows, cols)),
        )

    def normalize_table(self) -> npt.NDArray[np.float32]:
        """``[3, 256]``: the float32 each byte value of each channel becomes. The feature is
        exactly ``table[c][resized_u8]``, which is what its compact form carries."""
        return self._table.copy()

    # -- layout -----------------------------------------------------------------------------
    def _ids(self, rows: int, cols: int) -> tuple[int, ...]:
        p = self.p
        return row_break_ids(
            rows, cols, p.image_token_id, p.image_break_token_id, p.image_end_token_id
        )

    def layout(
        self, input_ids: npt.NDArray[np.int64], geometries: Sequence[mm.Geometry]
    ) -> mm.TokenLayout:
        patterns = [mm.Explicit(self._ids(*g.grid)) for g in geometries]
        return mm.layout_by_placeholder_patterns(input_ids, self.p.image_token_id, patterns)

    def tokens_for(self, geometry: mm.Geometry) -> int:
        rows, cols = geometry.grid
        return rows * (cols + 1)

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        _, _, rows, cols = self._grid(width, height)
        return rows * (cols + 1)

    def content_tokens_for_dimensions(self, width: int, height: int) -> int:
        """The ``[IMG]`` tokens alone (the vision embeddings the model produces)."""
        _, _, rows, cols = self._grid(width, height)
        return rows * cols

    # -- conformance ------------------------------------------------------------------------
    def expected_feature_shape(self, geometry: mm.Geometry) -> tuple[int, ...]:
        return (3, geometry.height, geometry.width)

    def rejected_conformance_sizes(self) -> tuple[mm.Size, ...]:
        n = self.p.longest_edge * 2 + 1
        return ((n, 1), (1, n))

    @classmethod
    def spec_from_hf(
        cls, preprocessor_config: dict[str, Any], config: dict[str, Any]
    ) -> dict[str, Any]:
        from .hf import spec_from_hf

        return spec_from_hf(preprocessor_config, config)

    @classmethod
    def spec_from_model_dir(cls, directory: Path) -> dict[str, Any]:
        """The directory itself goes to `spec_from_hf`: its tokenizer files carry ids too."""
        from .hf import spec_from_hf

        return spec_from_hf(directory)
