"""The Gemma 3 family: every image (and, with pan and scan, each crop of it) becomes a
``[3, size, size]`` float32 plane set, and its placeholder ``<start_of_image>`` becomes
``\\n\\n <start_of_image> <image_soft_token>×256 <end_of_image> \\n\\n``. The pixels are a
composition of the core's kernels: each part (the whole image, then each crop cut from the
original pixels) resized bilinearly to ``size x size``, HF's rescale-and-normalize table, one
tile per part."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .params import Gemma3Params


def pan_and_scan_rects(width: int, height: int, p: Gemma3Params) -> list[mm.Rect]:
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


def token_type_ids(input_ids: npt.ArrayLike, p: Gemma3Params) -> npt.NDArray[np.int64]:
    """HF's ``token_type_ids`` for an expanded prompt: 1 on image soft tokens, 0 elsewhere
    (what Gemma 3's bidirectional image attention reads)."""
    soft: npt.NDArray[np.bool_] = np.asarray(input_ids) == p.image_soft_token_id
    return soft.astype(np.int64)


class Gemma3Family(mm.Family[Gemma3Params]):
    name: ClassVar[str] = "gemma3"
    # As HF's loaders: alpha composited onto white, EXIF orientation applied.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )

    def features(self) -> mm.Features:
        p = self.params
        resample, _ = mm.hf_backend(p.resample, "bilinear")
        return mm.Features(
            table=mm.Table.hf(
                p.image_mean, p.image_std, p.resample, rescale_factor=p.rescale_factor
            ),
            writer=mm.Tiles(p.size),
            resample=resample,
        )

    def plan(self, width: int, height: int) -> mm.Plan:
        """The whole image, then each pan-and-scan crop, every one resized to ``size²``."""
        p = self.params
        square = (p.size, p.size)
        crops = pan_and_scan_rects(width, height, p) if p.do_pan_and_scan else []
        parts = (mm.Part(square), *(mm.Part(square, source=rect) for rect in crops))
        side = math.isqrt(p.mm_tokens_per_image)
        geometry = mm.Geometry(p.size, p.size, (len(parts), side, side))
        return mm.Plan(self._pattern(len(crops)), geometry, parts)

    def aux(self, plan: mm.Plan) -> Mapping[str, mm.Tensor]:
        crops = np.array([len(plan.parts) - 1], dtype=np.int64)
        return {"num_crops": mm.Tensor(crops, "int64")}

    def _pattern(self, crops: int) -> mm.Explicit:
        """One item's ids, as `Gemma3Processor` expands them; its content range runs from its
        first soft token to its last."""
        p = self.params
        soft = [p.image_soft_token_id] * p.mm_tokens_per_image
        nl2 = p.double_newline_token_id
        seq = [nl2, p.image_token_id, *soft, p.eoi_token_id, nl2]
        if crops == 0:
            return mm.Explicit(tuple(seq), (2, 2 + p.mm_tokens_per_image))
        ids = [*p.pan_and_scan_prefix_ids, *seq, *p.pan_and_scan_infix_ids]
        for k in range(crops):
            ids += [*(p.pan_and_scan_separator_ids if k else ()), *seq]
        first = len(p.pan_and_scan_prefix_ids) + 2
        last = len(ids) - 3  # the last soft token: before <end_of_image> and "\n\n"
        return mm.Explicit(tuple(ids), (first, last + 1))

    @classmethod
    def spec_from_hf(
        cls,
        model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory (``resample``, ``do_pan_and_scan`` and
        ``token_ids`` as `sglang_mm_gemma3.hf.spec_from_hf` takes them)."""
        from .hf import spec_from_hf

        return spec_from_hf(model, **options)
