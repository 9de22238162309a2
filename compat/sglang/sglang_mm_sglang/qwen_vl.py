"""The extension's ``qwen_vl`` submodule, on the `sglang_mm_qwen_vl` plugin and the core's
`Pipeline`: same names, parameters and return values.

``spec_json`` is the extension's (``{"family": "qwen_vl", "image_token_id", "patch_size",
"merge_size", "temporal_patch_size", "min_pixels", "max_pixels", "image_mean", "image_std",
"resample": "pil" | "aten_u8"}``); one pipeline per distinct spec and thread count is kept
(`_PIPELINES_KEPT`), so repeated calls do not rebuild it."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sglang_mm_core import MmInput, MmItem, MRope, Pipeline, Registry, Tensor, pipeline_from_spec
from sglang_mm_core.errors import KernelArgumentError, LayoutError
from sglang_mm_core.plugin import mrope_positions

from ._qwen_spec import spec_document
from ._support import missing_plugin, threads
from .errors import value_errors

try:
    import sglang_mm_qwen_vl as _qwen
except ModuleNotFoundError as e:  # installed without its dependencies
    raise missing_plugin(e, "sglang-mm-qwen-vl", "qwen_vl")  # noqa: B904 (the cause is kept)

#: Pipelines kept, least recently used first out (each holds its thread pool).
_PIPELINES_KEPT = 8

Data = bytes | bytearray | memoryview
#: An image as the extension takes it: encoded bytes, or a path, URL, ``data:`` URL or base64.
Source = bytes | bytearray | memoryview | str
Grid = tuple[int, int, int]


@functools.cache
def _registry() -> Registry:
    """The plugin imported above, whatever the entry points or ``$SGLANG_MM_PLUGINS`` say."""
    reg = Registry()
    reg.register_family(_qwen.QwenVLFamily, name="compat.sglang.qwen_vl")
    return reg


@dataclass(frozen=True)
class _Bound:
    pipeline: Pipeline
    image_token_id: int


@functools.lru_cache(maxsize=_PIPELINES_KEPT)
def _pipeline(spec_json: str | bytes, n_threads: int) -> _Bound:
    doc = spec_document(spec_json, n_threads)
    pipe = pipeline_from_spec(doc, registry=_registry())
    return _Bound(pipe, doc["params"]["image_token_id"])


def _spec_pipeline(spec_json: str | bytes) -> _Bound:
    return _pipeline(spec_json, threads())


def _grid(grid: tuple[int, ...]) -> Grid:
    t, h, w = grid
    return t, h, w


def _values(item: MmItem) -> npt.NDArray[np.float32]:
    """The item's flat ``pixel_values`` (a view: the feature is one contiguous array)."""
    feature = item.feature
    assert isinstance(feature, Tensor)  # not compact: process() was not asked for it
    values: npt.NDArray[np.float32] = feature.array.reshape(-1)
    return values


@value_errors
def preprocess(data: Data, spec_json: str) -> tuple[npt.NDArray[np.float32], Grid]:
    """``(pixel_values, (t, h, w))`` of one encoded image: decode, smart_resize, bicubic,
    normalize, patchify; ``pixel_values`` flat float32 ``[t*h*w * 3*tps*ps*ps]``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be the encoded image bytes, got {type(data).__name__}")
    bound = _spec_pipeline(spec_json)
    out = bound.pipeline.process(MmInput(input_ids=[bound.image_token_id], images=[data]))
    item = out.items[0]
    return _values(item), _grid(item.geometry.grid)


@value_errors
def process_mm(
    input_ids: Sequence[int] | npt.NDArray[np.integer],
    images: Sequence[Source],
    spec_json: str,
) -> tuple[
    list[int],
    npt.NDArray[np.float32],
    list[Grid],
    list[int],
    list[tuple[int, int]],
    npt.NDArray[np.int64],
    int,
]:
    """One request: ``(input_ids expanded, pixel_values of all images concatenated (flat
    float32), [(t, h, w)], [content_hash], [(start, end)] inclusive, MRoPE positions flat int64
    [3 * L], delta)``. ``images`` are sources as the core reads them (bytes, paths, URLs,
    ``data:`` URLs, base64); each placeholder ``image_token_id`` is one image, in order."""
    images = list(images)
    if not images and len(input_ids):
        raise LayoutError("multimodal request without image sources")
    out = _spec_pipeline(spec_json).pipeline.process(MmInput(input_ids=input_ids, images=images))
    features = [_values(item) for item in out.items]
    pixel_values = features[0] if len(features) == 1 else np.concatenate(features)
    assert isinstance(out.positions, MRope)  # the qwen_vl family's positions
    return (
        out.input_ids.tolist(),
        pixel_values,
        [_grid(item.geometry.grid) for item in out.items],
        [item.hash for item in out.items],
        list(out.offsets),
        out.positions.positions.reshape(-1),
        out.positions.delta,
    )


@value_errors
def smart_resize_py(
    height: int, width: int, factor: int, min_pixels: int, max_pixels: int
) -> tuple[int, int]:
    """``(h, w)`` by SGLang's ``smart_resize`` rule (the one `preprocess` uses)."""
    return _qwen.smart_resize(height, width, factor, min_pixels, max_pixels, "sglang")


@value_errors
def mrope_image_only_py(
    input_len: int, items: Sequence[tuple[int, int, int, int, int]], merge_size: int
) -> tuple[npt.NDArray[np.int64], int]:
    """``(positions flat int64 [3 * input_len], delta)`` of a prompt whose media are images;
    ``items`` are ``(start, end_inclusive, t, h, w)`` with the unmerged patch grid."""
    if merge_size < 1:
        raise KernelArgumentError(f"merge_size must be >= 1, got {merge_size}")
    offsets, grids = [], []
    for start, end, t, h, w in items:
        if h % merge_size or w % merge_size:
            raise LayoutError(f"grid {t}x{h}x{w} is not a multiple of merge_size {merge_size}")
        offsets.append((start, end))
        grids.append((t, h // merge_size, w // merge_size))
    rope = mrope_positions(input_len, offsets, grids)
    return rope.positions.reshape(-1), rope.delta


__all__ = [
    "mrope_image_only_py",
    "preprocess",
    "process_mm",
    "smart_resize_py",
]
