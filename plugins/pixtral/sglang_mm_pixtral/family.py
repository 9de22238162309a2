"""The ``pixtral`` family: Pixtral-12B and Mistral 3 (``mistral3`` in transformers).

Each image is resized to fit ``longest_edge`` with sides in whole tokens, normalized with
CLIP's mean and std, and fed as its own ``[3, H, W]`` float32 (no padding: images of one request
differ in size). Its placeholder expands to rows of ``[IMG]`` x columns, each row closed by
``[IMG_BREAK]`` and the last by ``[IMG_END]``; the item's offsets span that whole sequence and
the aux ``content_mask`` marks the ``[IMG]`` positions the vision embeddings fill. The pixels
are a composition of the core's kernels (bicubic resize, table, channel planes)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

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


class PixtralFamily(mm.Family[PixtralParams]):
    name: ClassVar[str] = "pixtral"
    # As HF's loaders (and mistral-common): alpha onto white, EXIF orientation applied.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )

    def features(self) -> mm.Features:
        p = self.params
        resample, _ = mm.hf_backend(p.resample)
        return mm.Features(
            table=mm.Table.hf(p.image_mean, p.image_std, p.resample),
            writer=mm.ChannelPlanes(),
            resample=resample,
        )

    def target_size(self, height: int, width: int) -> tuple[int, int]:
        """The resized ``(H, W)`` of an image, as HF computes it."""
        return target_size(height, width, self.params.longest_edge, self.params.factor)

    def plan(self, width: int, height: int) -> mm.Plan:
        p = self.params
        h, w = self.target_size(height, width)
        if h <= 0 or w <= 0:
            raise mm.KernelArgumentError(
                f"a {width}x{height} image shrinks to {w}x{h} pixels under longest_edge "
                f"{p.longest_edge} (aspect ratio above {p.longest_edge}:1); "
                "HF's Pixtral processor cannot resize it either"
            )
        rows, cols = h // p.factor, w // p.factor
        ids = row_break_ids(
            rows, cols, p.image_token_id, p.image_break_token_id, p.image_end_token_id
        )
        return mm.Plan(mm.Explicit(ids), mm.Geometry(h, w, (rows, cols)))

    def aux(self, plan: mm.Plan) -> Mapping[str, mm.Tensor]:
        g = plan.geometry
        assert isinstance(plan.tokens, mm.Explicit)
        ids = np.asarray(plan.tokens.ids, dtype=np.int64)
        return {
            "image_sizes": mm.Tensor(np.array([g.height, g.width], dtype=np.int64), "int64"),
            "content_mask": mm.Tensor(
                (ids == self.params.image_token_id).astype(np.uint8), "uint8"
            ),
        }

    def normalize_table(self) -> npt.NDArray[np.float32]:
        """``[3, 256]``: the float32 each byte value of each channel becomes. The feature is
        exactly ``table[c][resized_u8]``, which is what its compact form carries."""
        table = self.features().table
        assert table is not None
        return np.array(table.values)

    def rejected_conformance_sizes(self) -> tuple[mm.Size, ...]:
        n = self.params.longest_edge * 2 + 1
        return ((n, 1), (1, n))

    @classmethod
    def spec_from_hf(
        cls,
        model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory (``resample="pil"`` or ``"aten_u8"``)."""
        from .hf import spec_from_hf

        return spec_from_hf(model, **options)
