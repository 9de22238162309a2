"""Helpers of the core driver/registry/CLI tests (a uniquely named module: several test folders
have a conftest.py). Importing it puts the toy family package (tests/toy) on sys.path; its
dist-info (tests/toy/site) stays off it, so only subprocesses see the toy as installed."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np

TOY = Path(__file__).resolve().parent / "toy"
if str(TOY) not in sys.path:
    sys.path.insert(0, str(TOY))


def png_bytes(image: np.ndarray, mode: str | None = None) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image, mode=mode).save(buf, format="PNG")
    return buf.getvalue()


def toy_env(*sites: str, **extra: str) -> dict[str, str]:
    """Environment for a subprocess that sees the toy distribution(s) as installed."""
    env = dict(os.environ)
    paths = [str(TOY), *(str(TOY / s) for s in sites), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(paths).rstrip(os.pathsep)
    env.pop("SGLANG_MM_PLUGINS", None)
    env.pop("SGLANG_MM_CONFORMANCE_FAMILIES", None)
    env.update(extra)
    return env
