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


def write_wheel(
    dest: Path, dist: str, version: str, files: dict[str, str], entry_points: dict[str, str]
) -> Path:
    """A pure-Python wheel of ``files`` declaring ``entry_points`` in the ``sglang_mm`` group,
    written with zipfile so building it needs no build backend (and nothing to download)."""
    import base64
    import hashlib
    import zipfile

    norm = dist.replace("-", "_")
    info = f"{norm}-{version}.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: sglang-mm-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
        f"{info}/entry_points.txt": "[sglang_mm]\n"
        + "".join(f"{k} = {v}\n" for k, v in entry_points.items()),
    }
    record = []
    for name, text in contents.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    path = dest / f"{norm}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in contents.items():
            zf.writestr(name, text)
        zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


_BROKEN_FAMILY = """
from sglang_mm_core.plugin import Family, FamilyParams, hookimpl


class Params(FamilyParams):
    image_token_id: int = 5


class BadInit(Family[Params]):
    name = "badinit"

    def __init__(self, params):
        raise RuntimeError("weights file missing")

    def plan(self, width, height):
        raise NotImplementedError

    def features(self):
        raise NotImplementedError


@hookimpl
def sglang_mm_families():
    return [BadInit]
"""

#: The broken plugin distributions `install_broken_plugins` installs: distribution ->
#: (entry point name, what is wrong).
BROKEN_PLUGINS = {
    "sglang-mm-brokenimport": ("brokenimport", "its module imports a missing dependency"),
    "sglang-mm-malformed": ("malformed", "its entry point value is not a module path"),
    "sglang-mm-badinit": ("badinit", "its family raises in __init__"),
    "sglang-mm-badhook": ("badhook", "its sglang_mm_families hook raises"),
}


def install_broken_plugins(root: Path) -> Path:
    """Really install (pip, from local wheels, no index) the distributions of
    `BROKEN_PLUGINS` into ``root / "site"``; returns that folder, for ``PYTHONPATH``."""
    import subprocess

    wheels = root / "wheels"
    wheels.mkdir(parents=True)
    built = [
        write_wheel(
            wheels,
            "sglang-mm-brokenimport",
            "0.1.0",
            {"sglang_mm_brokenimport/__init__.py": "import sglang_mm_no_such_dependency\n"},
            {"brokenimport": "sglang_mm_brokenimport"},
        ),
        write_wheel(
            wheels,
            "sglang-mm-malformed",
            "0.2.0",
            {"sglang_mm_malformed/__init__.py": ""},
            {"malformed": "sglang_mm_malformed:plugin:extra"},
        ),
        write_wheel(
            wheels,
            "sglang-mm-badinit",
            "0.3.0",
            {"sglang_mm_badinit/__init__.py": _BROKEN_FAMILY},
            {"badinit": "sglang_mm_badinit"},
        ),
        write_wheel(
            wheels,
            "sglang-mm-badhook",
            "0.4.0",
            {
                "sglang_mm_badhook/__init__.py": (
                    "from sglang_mm_core.plugin import hookimpl\n\n\n@hookimpl\n"
                    "def sglang_mm_families():\n    raise ValueError('no config found')\n"
                )
            },
            {"badhook": "sglang_mm_badhook"},
        ),
    ]
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-index",
            "--target",
            str(site),
            *map(str, built),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return site
