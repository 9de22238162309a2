"""The preprocessing server (docs/server.md): a standalone HTTP service (``sglang-mm serve``)
and an embedded mode whose ingress and workers run inside a host process.

Needs the ``server`` extra (``pip install 'sglang-mm-core[server]'``). The names below load
lazily, so `sglang_mm_core.server.codec` (used by the client) works without the extra. Its
errors (`LaunchError`, `RidError`) are in `sglang_mm_core.errors` with all the others."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import COMPACT_MEDIA_TYPE
    from .config import ServerConfig, server_spec
    from .cores import partition_cores, pin_current_thread
    from .embedded import MmServer
    from .ring import IngressBatch
    from .standalone import serve

_WHERE = {
    "COMPACT_MEDIA_TYPE": "app",
    "IngressBatch": "ring",
    "MmServer": "embedded",
    "ServerConfig": "config",
    "partition_cores": "cores",
    "pin_current_thread": "cores",
    "serve": "standalone",
    "server_spec": "config",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "COMPACT_MEDIA_TYPE",
    "IngressBatch",
    "MmServer",
    "ServerConfig",
    "partition_cores",
    "pin_current_thread",
    "serve",
    "server_spec",
]
