"""The Gemma 3 family: every image (and, with pan and scan, each crop of it) becomes a
``[3, size, size]`` float32 plane set, and its placeholder ``<start_of_image>`` becomes
``\\n\\n <start_of_image> <image_soft_token>×256 <end_of_image> \\n\\n``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from . import _native
from .params import Gemma3Params

Rect = tuple[int, int, int, int]


def pan_and_scan_rects(width: int, height: int, p: Gemma3Params) -> list[Rect]:
    """The crops ``(x, y, w, h)`` HF's ``pan_and_scan`` cuts from a ``width x height`` image
    (none when the image is not elongated enough or the crops would be too small), with its
    float comparisons and roundings."""
    if width >= height:
        if width / height < p.pan_and_scan_min_ratio_to_activate:
            return []
        n = math.floor(width / height + 0.5)
        n = min(math.floor(width / p.pan_and_scan_min_crop_size), n)
        nw, nh = min(p.pan_and_scan_max_num_crops, max(2, n)), 1
    else:
        if height / width < p.pan_and_scan_min_ratio_to_activate:
            return []
        n = math.floor(height / width + 0.5)
        n = min(math.floor(height / p.pan_and_scan_min_crop_size), n)
        nw, nh = 1, min(p.pan_and_scan_max_num_crops, max(2, n))
    cw, ch = math.ceil(width / nw), math.ceil(height / nh)
    if min(cw, ch) < p.pan_and_scan_min_crop_size:
        return []
    # numpy slicing clips the last crop at the image's edge, as HF's does.
    return [
        (x, y, min(cw, width - x), min(ch, height - y))
        for y in range(0, ch * nh, ch)
        for x in range(0, cw * nw, cw)
    ]


def normalize_table(p: Gemma3Params) -> npt.NDArray[np.float32]:
    """Per channel, the float32 each byte value becomes, with the reference backend's own
    arithmetic: PIL ``f32(f64(v) * rescale)`` then ``(x - mean) / std`` in float32; torchvision
    the fused ``(f32(v) - mean / rescale) / (std / rescale)``. A 256-entry table on uint8 is
    also what a compact feature (uint8 pixels + table) would carry."""
    v = np.arange(256)
    mean = np.asarray(p.image_mean, np.float32)[:, None]
    std = np.asarray(p.image_std, np.float32)[:, None]
    if p.resample == "pil":
        x = (v.astype(np.float64) * p.rescale_factor).astype(np.float32)[None, :]
        return np.ascontiguousarray((x - mean) / std, dtype=np.float32)
    k = np.float32(1.0 / p.rescale_factor)
    x = v.astype(np.float32)[None, :]
    return np.ascontiguousarray((x - mean * k) / (std * k), dtype=np.float32)


def token_type_ids(input_ids: npt.ArrayLike, p: Gemma3Params) -> npt.NDArray[np.int64]:
    """HF's ``token_type_ids`` for an expanded prompt: 1 on image soft tokens, 0 elsewhere
    (what Gemma 3's bidirectional image attention reads)."""
    soft: npt.NDArray[np.bool_] = np.asarray(input_ids) == p.image_soft_token_id
    return soft.astype(np.int64)


class Gemma3Family(mm.Family):
    name: ClassVar[str] = "gemma3"
    Params: ClassVar[type[mm.FamilyParams]] = Gemma3Params
    # As HF's loaders: alpha composited onto white, EXIF orientation applied.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )
    # Both backends resize uint8 pixels, then rescale + normalize each sample on its own: a
    # per-channel table on uint8, so the compact form is exact.
    offers_compact: ClassVar[bool] = True

    def __init__(self, params: mm.FamilyParams) -> None:
        super().__init__(params)
        assert isinstance(self.params, Gemma3Params)
        self.p = params = self.params
        self._table = normalize_table(params)

    def _rects(self, width: int, height: int) -> list[Rect]:
        whole = [(0, 0, width, height)]
        if not self.p.do_pan_and_scan:
            return whole
        return whole + pan_and_scan_rects(width, height, self.p)

    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> mm.ProcessedItem:
        p = self.p
        img = mm.as_rgb(image)
        rects = self._rect_array(img)
        values = _native.process(img, rects, p.size, self._table, p.resample, threads)
        return self._item(mm.Tensor(values, "float32"), len(rects) - 1)

    def process_item_compact(
        self, image: npt.NDArray[np.uint8], *, threads: int = 1
    ) -> mm.ProcessedItem:
        """`process_item` with the feature as codes ``[crops + 1, 3, 1, size, size]`` plus the
        float32 normalize table, straight from the kernel."""
        p = self.p
        img = mm.as_rgb(image)
        rects = self._rect_array(img)
        codes = _native.process_compact(img, rects, p.size, p.resample, threads)
        n = len(rects)
        feature = mm.CompactTensor(
            codes=codes.reshape(n, 3, 1, p.size, p.size),
            luts=self._table,
            dtype="float32",
            shape=(n, 3, p.size, p.size),
            channel_axis=1,
            repeat_axis=2,
            repeats=1,
        )
        return self._item(feature, n - 1)

    def _rect_array(self, img: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
        h, w = img.shape[:2]
        return np.asarray(self._rects(w, h), dtype=np.int64)

    def _item(self, feature: mm.Tensor | mm.CompactTensor, crops: int) -> mm.ProcessedItem:
        p = self.p
        side = math.isqrt(p.mm_tokens_per_image)
        return mm.ProcessedItem(
            feature=feature,
            aux={"num_crops": mm.Tensor(np.array([crops], dtype=np.int64), "int64")},
            geometry=mm.Geometry(p.size, p.size, (crops + 1, side, side)),
        )

    # The image sequence ------------------------------------------------------------------

    def _sequence(self) -> list[int]:
        p = self.p
        soft = [p.image_soft_token_id] * p.mm_tokens_per_image
        nl2 = p.double_newline_token_id
        return [nl2, p.image_token_id, *soft, p.eoi_token_id, nl2]

    def _pattern(self, crops: int) -> mm.Explicit:
        """One item's ids; its content range runs from its first soft token to its last."""
        p = self.p
        seq = self._sequence()
        if crops == 0:
            return mm.Explicit(tuple(seq), (2, 2 + p.mm_tokens_per_image))
        ids = [*p.pan_and_scan_prefix_ids, *seq, *p.pan_and_scan_infix_ids]
        for k in range(crops):
            ids += [*(p.pan_and_scan_separator_ids if k else ()), *seq]
        first = len(p.pan_and_scan_prefix_ids) + 2
        last = len(ids) - 3  # the last soft token: before <end_of_image> and "\n\n"
        return mm.Explicit(tuple(ids), (first, last + 1))

    def _crops(self, geometry: mm.Geometry) -> int:
        return geometry.grid[0] - 1

    def layout(
        self, input_ids: npt.NDArray[np.int64], geometries: Sequence[mm.Geometry]
    ) -> mm.TokenLayout:
        patterns = [self._pattern(self._crops(g)) for g in geometries]
        return mm.layout_by_placeholder_patterns(input_ids, self.p.image_token_id, patterns)

    def expected_feature_shape(self, geometry: mm.Geometry) -> tuple[int, ...]:
        # Channel-major pixels per crop, not one row per token.
        return (geometry.grid[0], 3, geometry.height, geometry.width)

    def _crops_for_dimensions(self, width: int, height: int) -> int:
        return len(self._rects(width, height)) - 1

    def tokens_for(self, geometry: mm.Geometry) -> int:
        a, b = self._pattern(self._crops(geometry)).content or (0, 0)
        return b - a

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        a, b = self._pattern(self._crops_for_dimensions(width, height)).content or (0, 0)
        return b - a

    def prompt_tokens_for_dimensions(self, width: int, height: int) -> int:
        return len(self._pattern(self._crops_for_dimensions(width, height)).ids)

    @classmethod
    def spec_from_hf(
        cls,
        preprocessor_config: Mapping[str, Any] | str | Path,
        config: Mapping[str, Any] | None = None,
        *,
        resample: str = "aten_u8",
        do_pan_and_scan: bool | None = None,
        token_ids: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory, or its two parsed config files."""
        from .hf import spec_from_hf

        return spec_from_hf(
            preprocessor_config,
            config,
            resample=resample,
            do_pan_and_scan=do_pan_and_scan,
            token_ids=token_ids,
        )

    @classmethod
    def spec_from_model_dir(cls, directory: Path) -> dict[str, Any]:
        """The directory itself goes to `spec_from_hf`: its tokenizer files carry ids too."""
        from .hf import spec_from_hf

        return spec_from_hf(directory)
