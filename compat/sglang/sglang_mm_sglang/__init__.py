"""SGLang's compiled extension ``sglang.srt.rust_extensions._multimodal``, on sglang-mm.

The submodules `common`, `dsv41`, `inkling` and `qwen_vl` have the extension's function names,
parameters and return types, so switching is one line (docs/compat-sglang.md)::

    import sglang_mm_sglang as _multimodal  # was load_rust_extension(...)

This distribution (``sglang-mm-sglang``) depends on the core and on the family plugins it
covers (``sglang-mm-qwen-vl``, ``sglang-mm-inkling``, ``sglang-mm-deepseek-v41``); `dsv41`,
`inkling` and `qwen_vl` load on first use. Errors are the typed `sglang_mm_core.errors`
classes and, where the extension raises `ValueError`, also `ValueError`
(`sglang_mm_sglang.errors`). Threads: ``$SGLANG_MM_THREADS``, else the extension's
``$SGL_MM_RS_THREADS``, else the core's default (`threads`)."""

from __future__ import annotations

import importlib
from types import ModuleType

from . import common, errors
from ._support import threads

#: The extension's submodules, all provided here.
SUBMODULES = ("common", "dsv41", "inkling", "qwen_vl")
_LAZY = ("dsv41", "inkling", "qwen_vl")


def __getattr__(name: str) -> ModuleType:
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["SUBMODULES", "common", "dsv41", "errors", "inkling", "qwen_vl", "threads"]
