"""The family-author surface: everything a family plugin imports, from one module.

    from sglang_mm_core.plugin import Family, FamilyParams, ProcessedItem, hookimpl

A plugin that imports only from here (and from `sglang_mm_core.conformance` in its tests) is
insulated from how the core is organised inside: the modules behind these names are private
(``sglang_mm_core._family``, ``_carriers``, ``_layout``, ``_positions``, ...) and may move.
What is listed in ``__all__`` follows the deprecation rule: added, deprecated with a warning
for one release, then removed.

- the contract: `Family`, `FamilyParams`, `DecodeDefaults`, `DEFAULT_CONFORMANCE_SIZES`,
  `Size` and `FeatureShape`;
- what ``process_item`` returns: `ProcessedItem`, `Tensor` (`DType` tags), `Geometry`;
  `CompactTensor`, what ``process_item_compact`` puts in its place (codes plus tables);
- what ``layout`` returns: `TokenLayout` of `Text` and `Media` segments whose pattern is a
  `Repeat` or an `Explicit`, usually built by `layout_by_placeholder` or
  `layout_by_placeholder_patterns`; `apply_layout` is what the driver does with it;
  `placeholder_indices` finds a token in a prompt (a native scan, for a family's own checks);
- what ``positions`` returns: `Rope1D`, or `MRope` from `mrope_positions`;
- the entry point hook marker `hookimpl`;
- the one thread decision, for a family's own direct API: `resolve_threads` (the pool size
  the driver would use) and `available_cores`;
- the errors a family raises: `MmRequestError` and its `KernelArgumentError`, `LayoutError`,
  `LimitError`, `DecodeError`; `SpecError` from ``spec_from_hf``; `MmError` is their root;
- shared params field types: `ChannelMean`, `ChannelStd` (finite; std non-zero);
- shared helpers: `as_rgb` (the RGB uint8 check), `CLIP_MEAN` / `CLIP_STD`,
  `IMAGENET_STANDARD_MEAN` / `IMAGENET_STANDARD_STD`, `DEFAULT_MAX_PIXELS` /
  `DEFAULT_MAX_SIDE`, and for ``spec_from_hf``: `check_hf_settings` (with `HF_INERT_KEYS`,
  the keys it accepts for every family), `hf_configs`, `load_model_dir`,
  `read_json_object`; `deprecated_aliases`, to retire a plugin's own names the way the
  core retires its.

The model-agnostic kernels themselves (decode, resize, hash) are in `sglang_mm_core.common`."""

from __future__ import annotations

from ._carriers import DType, Geometry, ProcessedItem, Tensor
from ._compact import CompactTensor
from ._deprecation import deprecated_aliases
from ._family import (
    DEFAULT_CONFORMANCE_SIZES,
    DecodeDefaults,
    Family,
    FamilyParams,
    FeatureShape,
    Size,
)
from ._hf import HF_INERT_KEYS, check_hf_settings, hf_configs, load_model_dir, read_json_object
from ._layout import (
    Explicit,
    Media,
    Pattern,
    Repeat,
    Segment,
    Text,
    TokenLayout,
    apply_layout,
    layout_by_placeholder,
    layout_by_placeholder_patterns,
    placeholder_indices,
)
from ._params import ChannelMean, ChannelStd
from ._positions import MRope, Rope1D, mrope_positions
from .common import (
    CLIP_MEAN,
    CLIP_STD,
    DEFAULT_MAX_PIXELS,
    DEFAULT_MAX_SIDE,
    IMAGENET_STANDARD_MEAN,
    IMAGENET_STANDARD_STD,
    as_rgb,
)
from .driver import available_cores, resolve_threads
from .errors import (
    DecodeError,
    KernelArgumentError,
    LayoutError,
    LimitError,
    MmError,
    MmRequestError,
    SpecError,
)
from .registry import hookimpl

__all__ = [
    "CLIP_MEAN",
    "CLIP_STD",
    "DEFAULT_CONFORMANCE_SIZES",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_MAX_SIDE",
    "HF_INERT_KEYS",
    "IMAGENET_STANDARD_MEAN",
    "IMAGENET_STANDARD_STD",
    "ChannelMean",
    "ChannelStd",
    "CompactTensor",
    "DType",
    "DecodeDefaults",
    "DecodeError",
    "Explicit",
    "Family",
    "FamilyParams",
    "FeatureShape",
    "Geometry",
    "KernelArgumentError",
    "LayoutError",
    "LimitError",
    "MRope",
    "Media",
    "MmError",
    "MmRequestError",
    "Pattern",
    "ProcessedItem",
    "Repeat",
    "Rope1D",
    "Segment",
    "Size",
    "SpecError",
    "Tensor",
    "Text",
    "TokenLayout",
    "apply_layout",
    "as_rgb",
    "available_cores",
    "check_hf_settings",
    "deprecated_aliases",
    "hf_configs",
    "hookimpl",
    "layout_by_placeholder",
    "layout_by_placeholder_patterns",
    "load_model_dir",
    "mrope_positions",
    "placeholder_indices",
    "read_json_object",
    "resolve_threads",
]
