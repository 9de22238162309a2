"""sglang-mm: bit-exact multimodal preprocessing for LLM serving.

    import sglang_mm_core as mm

    with mm.pipeline_from_spec("spec.json") as pipe:
        out = pipe.process(mm.MmInput(input_ids=[...], images=["cat.jpg"]))

This module is the users' front door: the pipeline, the request and its answer, the spec, the
output files, the plugin registry and the errors. Family authors import from
`sglang_mm_core.plugin`; the names both offer (the carriers an answer holds, the errors) are
the same objects. The model-agnostic kernels live in `sglang_mm_core.common`, every exception
in `sglang_mm_core.errors`. Modules whose name starts with ``_`` are private."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._cache import CacheStats, FormStats
from ._carriers import Geometry, MmInput, MmItem, MmOutput, Tensor, TokenCount, VideoSource
from ._compact import CompactTensor
from ._driver import Pipeline, pipeline_from_spec
from ._native import __version__ as _native_version
from ._outputs import load_output, save_output
from ._positions import MRope, Rope1D
from ._registry import BrokenPlugin, Registry, default_registry, register_family, unregister
from ._spec import (
    CacheOptions,
    DecodeOptions,
    FetchPolicy,
    Limits,
    ResolvedSpec,
    Spec,
    load_spec,
    spec_json_schema,
)
from ._video_items import VideoOptions
from .errors import (
    CodecError,
    DecodeError,
    FetchError,
    KernelArgumentError,
    LayoutError,
    LimitError,
    MmError,
    MmRequestError,
    PluginError,
    SpecError,
    UnsupportedModalityError,
)

try:
    __version__: str = version("sglang-mm-core")
except PackageNotFoundError:  # running from a source tree without install metadata
    __version__ = _native_version

__all__ = [
    "BrokenPlugin",
    "CacheOptions",
    "CacheStats",
    "CodecError",
    "CompactTensor",
    "DecodeError",
    "DecodeOptions",
    "FetchError",
    "FetchPolicy",
    "FormStats",
    "Geometry",
    "KernelArgumentError",
    "LayoutError",
    "LimitError",
    "Limits",
    "MRope",
    "MmError",
    "MmInput",
    "MmItem",
    "MmOutput",
    "MmRequestError",
    "Pipeline",
    "PluginError",
    "Registry",
    "ResolvedSpec",
    "Rope1D",
    "Spec",
    "SpecError",
    "Tensor",
    "TokenCount",
    "UnsupportedModalityError",
    "VideoOptions",
    "VideoSource",
    "__version__",
    "default_registry",
    "load_output",
    "load_spec",
    "pipeline_from_spec",
    "register_family",
    "save_output",
    "spec_json_schema",
    "unregister",
]
