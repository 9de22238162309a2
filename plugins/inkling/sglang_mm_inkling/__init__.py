"""Inkling family plugin for sglang-mm, and a drop-in for the original ``inkling`` module.

The module-level functions keep the original names and argument order; all release the GIL,
the batch forms run their images in parallel and return them in input order. ``(h, w)`` in
their results is the size the patches were cut from, i.e. after the rescale (the family's
``Geometry``); ``bits`` is the flat single-frame ``[num_patches * ps * ps * 3]`` bfloat16 bit
array. ``threads`` (keyword-only, an addition) sets the pool: default the core's pool size
(`sglang_mm_core.plugin.resolve_threads`: ``$SGLANG_MM_THREADS``, else ``min(8, cores)``); 0 or
1 runs inline.

`InklingFamily` is the spec family ``inkling``: a composition of the core's kernels (the
functions above run the same table and patch writer in this package's Rust extension)."""

from __future__ import annotations

from .api import (
    decode_patchify,
    decode_patchify_batch,
    patchify_rgb,
    preprocess_images,
    rescale_patchify_hash,
)
from .family import InklingFamily, patch_grid
from .hf import spec_from_hf
from .params import InklingParams

__all__ = [
    "InklingFamily",
    "InklingParams",
    "decode_patchify",
    "decode_patchify_batch",
    "patch_grid",
    "patchify_rgb",
    "preprocess_images",
    "rescale_patchify_hash",
    "spec_from_hf",
]
