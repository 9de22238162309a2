"""The Inkling family: one token per ``patch_size`` square patch of the (rescaled) image, each
patch normalised to bfloat16 with the CLIP constants. The pixels are the Rust kernel's job;
this class only shapes its output and describes the prompt."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sglang_mm_core.plugin import (
    CompactTensor,
    DecodeDefaults,
    Family,
    FamilyParams,
    Geometry,
    KernelArgumentError,
    ProcessedItem,
    Tensor,
    TokenLayout,
    as_rgb,
    layout_by_placeholder,
)

from . import _native
from .hf import spec_from_hf
from .params import InklingParams


@functools.cache
def _tables() -> tuple[npt.NDArray[np.uint16], npt.NDArray[np.uint16]]:
    """The kernel's bf16 tables ``[3, 256]`` and pad values ``[3]``, read once."""
    t = _native.bf16_tables()
    luts, pad = np.ascontiguousarray(t[:, :256]), np.ascontiguousarray(t[:, 256])
    luts.setflags(write=False)
    pad.setflags(write=False)
    return luts, pad


def patch_grid(height: int, width: int, patch_size: int) -> tuple[int, int]:
    """``(nph, npw)``: ``ceil(h / ps)`` rows and ``floor(w / ps) + 1`` columns (the model
    always gets one column more than ``w / ps``)."""
    return -(-height // patch_size), width // patch_size + 1


class InklingFamily(Family):
    """Spec name ``inkling``; see docs/families/inkling.md."""

    name: ClassVar[str] = "inkling"
    Params: ClassVar[type[FamilyParams]] = InklingParams
    capabilities: ClassVar[frozenset[str]] = frozenset({"image"})
    # The reference opens the bytes with Pillow and calls .convert("RGB"): no EXIF transpose.
    decode_defaults: ClassVar[DecodeDefaults] = DecodeDefaults(alpha="drop", exif_orientation=False)
    # Every sample is a bf16 table of a uint8 pixel, or the constant pad value.
    offers_compact: ClassVar[bool] = True

    params: InklingParams

    def process_item(self, image: npt.NDArray[np.uint8], *, threads: int = 1) -> ProcessedItem:
        """Rescale, cut and normalise one RGB image in Rust with the GIL released.

        The feature is ``[num_patches, temporal_patch_size, ps, ps, 3]`` bfloat16 bits. Its
        frames are one buffer broadcast along axis 1 (stride 0), so the view is read-only:
        copy it (``np.array(...)``) before writing to it."""
        p = self.params
        arr = as_rgb(image)
        h, w, nph, npw, bits = _native.process_rgb(
            arr,
            p.patch_size,
            p.rescale_image_frac,
            p.rescale_image_max_upscaled_long_edge,
            max(1, threads),
        )
        n = nph * npw
        ps = p.patch_size
        one = bits.reshape(n, 1, ps, ps, 3)
        frames = np.broadcast_to(one, (n, p.temporal_patch_size, ps, ps, 3))
        return ProcessedItem(
            feature=Tensor(frames, "bfloat16"),
            aux={"num_patches": Tensor(np.array([n], dtype=np.int64), "int64")},
            geometry=Geometry(h, w, (nph, npw)),
        )

    def process_item_compact(
        self, image: npt.NDArray[np.uint8], *, threads: int = 1
    ) -> ProcessedItem:
        """`process_item` with the feature as codes ``[nph, npw, 1, ps, ps, 3]`` (one frame),
        the bf16 tables and the pad value outside the ``h x w`` image, from the kernel."""
        p = self.params
        h, w, nph, npw, codes = _native.process_rgb_compact(
            as_rgb(image),
            p.patch_size,
            p.rescale_image_frac,
            p.rescale_image_max_upscaled_long_edge,
            max(1, threads),
        )
        ps, n = p.patch_size, nph * npw
        luts, pad = _tables()
        feature = CompactTensor(
            codes=codes.reshape(nph, npw, 1, ps, ps, 3),
            luts=luts,
            dtype="bfloat16",
            shape=(n, p.temporal_patch_size, ps, ps, 3),
            channel_axis=5,
            repeat_axis=2,
            repeats=p.temporal_patch_size,
            pad=pad,
            pad_rules=((0, 3, h), (1, 4, w)),
        )
        return ProcessedItem(
            feature=feature,
            aux={"num_patches": Tensor(np.array([n], dtype=np.int64), "int64")},
            geometry=Geometry(h, w, (nph, npw)),
        )

    def layout(
        self, input_ids: npt.NDArray[np.int64], geometries: Sequence[Geometry]
    ) -> TokenLayout:
        """Each ``image_token_id`` is one image, expanded to its patch count."""
        counts = [self.tokens_for(g) for g in geometries]
        return layout_by_placeholder(input_ids, self.params.image_token_id, counts)

    def tokens_for(self, geometry: Geometry) -> int:
        nph, npw = geometry.grid
        return nph * npw

    def tokens_for_dimensions(self, width: int, height: int) -> int:
        """Patches of an upright ``width x height`` image, from the rescale rule alone."""
        if width <= 0 or height <= 0:
            raise KernelArgumentError(f"image size must be positive, got {width}x{height}")
        p = self.params
        w, h = _native.scaled_size(
            width, height, p.rescale_image_frac, p.rescale_image_max_upscaled_long_edge
        )
        nph, npw = patch_grid(h, w, p.patch_size)
        return nph * npw

    @classmethod
    def spec_from_hf(
        cls, preprocessor_config: dict[str, Any], config: dict[str, Any]
    ) -> dict[str, Any]:
        """A spec for an Inkling checkpoint; keys accepted are listed in
        docs/families/inkling.md, anything else that could change the pixels is refused."""
        return spec_from_hf(preprocessor_config, config)


__all__ = ["InklingFamily", "patch_grid"]
