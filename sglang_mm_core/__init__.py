"""sglang-mm: bit-exact multimodal preprocessing for LLM serving.

    import sglang_mm_core as mm

    with mm.pipeline_from_spec("spec.json") as pipe:
        out = pipe.process(mm.MmInput(input_ids=[...], images=["cat.jpg"]))

The model-agnostic kernels live in `sglang_mm_core.common`. Families (model-specific
processing) are plugins found through the ``sglang_mm`` entry point group; a family author
imports from `sglang_mm_core.plugin` (the names here that it also offers, e.g. `Family` and
`hookimpl`, stay as aliases). Modules whose name starts with ``_`` are private."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._carriers import (
    Geometry,
    MmInput,
    MmItem,
    MmOutput,
    ProcessedItem,
    Tensor,
    TokenCount,
)
from ._compact import CompactTensor
from ._env import migrate_legacy_env
from ._family import DecodeDefaults, Family, FamilyParams
from ._layout import (
    Explicit,
    Media,
    Repeat,
    Text,
    TokenLayout,
    apply_layout,
    layout_by_placeholder,
    layout_by_placeholder_patterns,
)
from ._native import __version__ as _native_version
from ._positions import MRope, Rope1D, mrope_positions
from .driver import Pipeline, pipeline_from_spec
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
from .outputs import load_output, save_output
from .registry import (
    BrokenPlugin,
    Registry,
    default_registry,
    hookimpl,
    register_family,
    unregister,
)
from .spec import (
    DecodeOptions,
    FetchPolicy,
    Limits,
    ResolvedSpec,
    Spec,
    load_spec,
    spec_json_schema,
)

# Nothing reads the environment at import time; from here on only the current names exist.
migrate_legacy_env()

try:
    __version__: str = version("sglang-mm-core")
except PackageNotFoundError:  # running from a source tree without install metadata
    __version__ = _native_version

__all__ = [
    "BrokenPlugin",
    "CodecError",
    "CompactTensor",
    "DecodeDefaults",
    "DecodeError",
    "DecodeOptions",
    "Explicit",
    "Family",
    "FamilyParams",
    "FetchError",
    "FetchPolicy",
    "Geometry",
    "KernelArgumentError",
    "LayoutError",
    "LimitError",
    "Limits",
    "MRope",
    "Media",
    "MmError",
    "MmInput",
    "MmItem",
    "MmOutput",
    "MmRequestError",
    "Pipeline",
    "PluginError",
    "ProcessedItem",
    "Registry",
    "Repeat",
    "ResolvedSpec",
    "Rope1D",
    "Spec",
    "SpecError",
    "Tensor",
    "Text",
    "TokenCount",
    "TokenLayout",
    "UnsupportedModalityError",
    "__version__",
    "apply_layout",
    "default_registry",
    "hookimpl",
    "layout_by_placeholder",
    "layout_by_placeholder_patterns",
    "load_output",
    "load_spec",
    "mrope_positions",
    "pipeline_from_spec",
    "register_family",
    "save_output",
    "spec_json_schema",
    "unregister",
]
