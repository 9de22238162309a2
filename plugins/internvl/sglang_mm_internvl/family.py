"""The `internvl` family: InternVL 3 and 3.5 images as tiles (an aspect-ratio grid plus a
thumbnail), bit-exact with HuggingFace's GotOcr2 image processor (either backend) or the model
card's ``load_image``, and ``InternVLProcessor``'s ``<img>`` + context tokens + ``</img>``.

The pixels are a composition of the core's kernels: the whole image resized to the grid's
canvas and to the thumbnail (two parts), one per-channel table, cut into tiles."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .params import InternVLParams
from .tiling import Tiling, tiling


class InternVLFamily(mm.Family[InternVLParams]):
    """One family for InternVL 3 and 3.5; the generations differ only in token ids."""

    name: ClassVar[str] = "internvl"
    # HF's processor on a PIL image: convert_to_rgb composites alpha on white, load_image applies
    # the EXIF orientation. The model card's load_image does neither (Image.open().convert("RGB")
    # drops alpha): its specs set decode {"alpha": "drop", "exif_orientation": false}.
    decode_defaults: ClassVar[mm.DecodeDefaults] = mm.DecodeDefaults(
        alpha="white", exif_orientation=True
    )

    def tiling(self, width: int, height: int) -> Tiling:
        """The tiles a ``width x height`` image becomes (the grid choice of the reference)."""
        if width <= 0 or height <= 0:
            raise mm.KernelArgumentError(f"image {width}x{height} has a zero side")
        p = self.params
        return tiling(
            width,
            height,
            tile=p.tile_size,
            crop_to_patches=p.crop_to_patches,
            min_patches=p.min_patches,
            max_patches=p.max_patches,
            rule=p.tiling,
        )

    def plan(self, width: int, height: int) -> mm.Plan:
        """The canvas ``cols*T x rows*T`` (cut into tiles row-major), then the thumbnail
        ``T x T``, both of the whole image; the placeholder becomes ``<img>``, the context
        tokens of every tile and ``</img>``, the offsets covering the context tokens only."""
        p = self.params
        t = self.tiling(width, height)
        size = p.tile_size
        parts: tuple[mm.Part, ...] = (mm.Part((t.cols * size, t.rows * size)),)
        if t.thumbnail:
            parts += (mm.Part((size, size)),)
        n = p.image_seq_length * t.tiles
        ids = (p.start_image_token_id, *([p.image_token_id] * n), p.end_image_token_id)
        return mm.Plan(
            tokens=mm.Explicit(ids, (1, n + 1)),
            geometry=mm.Geometry(
                t.rows * size, t.cols * size, (t.rows, t.cols, int(t.thumbnail), size)
            ),
            parts=parts,
        )

    def features(self) -> mm.Features:
        # Both backends resize to uint8, then rescale + normalize each sample on its own: a
        # per-channel table, so the compact form is exact.
        p = self.params
        resample, _ = mm.hf_backend(p.resample)
        return mm.Features(
            mm.Table.hf(p.image_mean, p.image_std, p.resample),
            mm.Tiles(p.tile_size),
            resample=resample,
            pass_order=p.pil_pass_order,
        )

    def aux(self, plan: mm.Plan) -> Mapping[str, mm.Tensor]:
        rows, cols, thumb, _ = plan.geometry.grid
        tiles = np.array([rows * cols + thumb], dtype=np.int64)
        return {"num_patches": mm.Tensor(tiles, "int64")}

    def normalize_table(self) -> npt.NDArray[np.float32]:
        """``[3, 256]``: the float32 every uint8 sample of each channel becomes (the feature
        is exactly ``table[c][resized_u8]``, which is what its compact form carries)."""
        table = self.features().table
        assert table is not None
        return np.array(table.values)

    @classmethod
    def spec_from_hf(
        cls,
        model: mm.ModelDir | str | Path | Mapping[str, Mapping[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        """A spec for a HuggingFace model directory (``resample="aten_u8"`` or ``"pil"``)."""
        from .hf import spec_from_hf

        return spec_from_hf(model, **options)


__all__ = ["InternVLFamily"]
