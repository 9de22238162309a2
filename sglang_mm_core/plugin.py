"""The family-author surface: everything a family plugin imports, from one module.

    from sglang_mm_core.plugin import Family, FamilyParams, Features, Plan, hookimpl

A family describes two things: what an upright image of a given size becomes (`Family.plan`:
its placeholder's tokens, its `Geometry`, the `Part` rectangles its pixels are cut into) and
how pixels become the feature (`Family.features`: a `Table`, a writer, and a resampler when
the core composes it). The driver derives every token count, the prompt layout, the compact
form and the item itself from those two answers. The modules behind these names are private.

- the contract: `Family`, `FamilyParams`, `DecodeDefaults`, `Plan`, `Placeholder`, `Size`,
  `DEFAULT_CONFORMANCE_SIZES`;
- the source modes a family's decode defaults may restrict (`DecodeDefaults.source_modes`):
  `SOURCE_MODES` (every label) and `SourceMode` (what `common.image_source_mode` reports);
- video, for a family whose ``modalities`` hold ``"video"``: `VideoHeader` (what
  `Family.video_plan` reads), `VideoOptions` (a request's per-video options), `VideoPlan`
  (what it answers) and `unsupported_option` (its error for an option it cannot honour);
- the feature pipeline: `Features`, `Table` (and `hf_backend`, the one reading of a HF
  backend's name), `Part`, the writers `ChannelPlanes`, `Tiles`, `PatchRows`, `ChwPatches`,
  `HwcPatches`, `PatchVectors`
  (and their base `Writer`, and `VideoSink`, where a writer's `video_sink` writes a video's
  full feature frame by frame); the types `Arithmetic`, `Backend`, `Rect`;
- what a plan's tokens are: `Repeat`, `Explicit` (`Pattern` is either);
- a target-size rule several references share: `temporal_smart_resize` (GLM-4.1V / 4.5V /
  4.6V images and videos, Qwen3-VL videos);
- the carriers: `Geometry`, `Tensor` (`DType` tags), `ProcessedItem` (what
  `Family.process_item` returns), `CompactTensor`;
- positions: `Rope1D`, or `MRope` from `mrope_positions` (and `token_runs`, an item's runs of
  one token, for blocks separated by text);
- the entry point hook marker `hookimpl`;
- the thread decision, for a family's own direct API: `resolve_threads`, `available_cores`;
- the errors a family raises: `MmRequestError` and its `KernelArgumentError`, `LayoutError`,
  `LimitError`, `DecodeError`, `UnsupportedModalityError`; `SpecError` from
  ``spec_from_hf``; `PluginError`; `MmError` is their root;
- shared params field types and constants: `ChannelMean`, `ChannelStd`, `CLIP_MEAN` /
  `CLIP_STD`, `IMAGENET_STANDARD_MEAN` / `IMAGENET_STANDARD_STD`, `DEFAULT_MAX_PIXELS` /
  `DEFAULT_MAX_SIDE`, and `as_rgb` (the RGB uint8 check);
- for ``spec_from_hf``: `ModelDir` (a model directory's JSON files), `check_hf_settings`
  and `HF_INERT_KEYS`, `hf_channels` (a per-channel setting) and `vision_geometry` (patch
  settings checked against ``vision_config``);
- text a family writes inside an item (a video's timestamps) in the model's own tokens:
  `load_tokenizer` (a `TextTokenizer` of a ``tokenizer.json``), `tokenizer_file`,
  `TOKENIZER_FILE`, and `TokenizerPath`, the params field type that loads it at spec time.

The model-agnostic kernels themselves (decode, resize, hash) are in `sglang_mm_core.common`."""

from __future__ import annotations

from ._carriers import DType, Geometry, ProcessedItem, Tensor
from ._compact import CompactTensor
from ._family import DEFAULT_CONFORMANCE_SIZES, DecodeDefaults, Family, FamilyParams, Size
from ._features import (
    Arithmetic,
    Backend,
    ChannelPlanes,
    ChwPatches,
    Features,
    HwcPatches,
    Part,
    PatchRows,
    PatchVectors,
    Rect,
    Table,
    Tiles,
    VideoSink,
    Writer,
    hf_backend,
)
from ._hf import HF_INERT_KEYS, ModelDir, check_hf_settings, hf_channels, vision_geometry
from ._layout import Explicit, Pattern, Repeat
from ._params import ChannelMean, ChannelStd
from ._plan import Placeholder, Plan
from ._positions import MRope, Rope1D, mrope_positions, token_runs
from ._registry import hookimpl
from ._sizes import temporal_smart_resize
from ._source_mode import SOURCE_MODES, SourceMode
from ._threads import available_cores, resolve_threads
from ._tokenizer import TOKENIZER_FILE, TextTokenizer, TokenizerPath, load_tokenizer, tokenizer_file
from ._video import VideoHeader
from ._video_items import VideoOptions, VideoPlan, unsupported_option
from .common import (
    CLIP_MEAN,
    CLIP_STD,
    DEFAULT_MAX_PIXELS,
    DEFAULT_MAX_SIDE,
    IMAGENET_STANDARD_MEAN,
    IMAGENET_STANDARD_STD,
    as_rgb,
)
from .errors import (
    DecodeError,
    KernelArgumentError,
    LayoutError,
    LimitError,
    MmError,
    MmRequestError,
    PluginError,
    SpecError,
    UnsupportedModalityError,
)

__all__ = [
    "CLIP_MEAN",
    "CLIP_STD",
    "DEFAULT_CONFORMANCE_SIZES",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_MAX_SIDE",
    "HF_INERT_KEYS",
    "IMAGENET_STANDARD_MEAN",
    "IMAGENET_STANDARD_STD",
    "SOURCE_MODES",
    "TOKENIZER_FILE",
    "Arithmetic",
    "Backend",
    "ChannelMean",
    "ChannelPlanes",
    "ChannelStd",
    "ChwPatches",
    "CompactTensor",
    "DType",
    "DecodeDefaults",
    "DecodeError",
    "Explicit",
    "Family",
    "FamilyParams",
    "Features",
    "Geometry",
    "HwcPatches",
    "KernelArgumentError",
    "LayoutError",
    "LimitError",
    "MRope",
    "MmError",
    "MmRequestError",
    "ModelDir",
    "Part",
    "PatchRows",
    "PatchVectors",
    "Pattern",
    "Placeholder",
    "Plan",
    "PluginError",
    "ProcessedItem",
    "Rect",
    "Repeat",
    "Rope1D",
    "Size",
    "SourceMode",
    "SpecError",
    "Table",
    "Tensor",
    "TextTokenizer",
    "Tiles",
    "TokenizerPath",
    "UnsupportedModalityError",
    "VideoHeader",
    "VideoOptions",
    "VideoPlan",
    "VideoSink",
    "Writer",
    "as_rgb",
    "available_cores",
    "check_hf_settings",
    "hf_backend",
    "hf_channels",
    "hookimpl",
    "load_tokenizer",
    "mrope_positions",
    "resolve_threads",
    "temporal_smart_resize",
    "token_runs",
    "tokenizer_file",
    "unsupported_option",
    "vision_geometry",
]
