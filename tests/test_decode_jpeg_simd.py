"""libjpeg-turbo's C code paths decode to the same bits as its SIMD ones.

A machine without nasm builds libjpeg-turbo without SIMD (the build prints one warning). That
is only acceptable if such a build decodes every JPEG exactly as the SIMD build does. The C
code of both builds is the same; `JSIMD_FORCENONE=1` makes this (SIMD) build run exactly that
C code, so comparing the two runs here proves the property on the whole JPEG corpus."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from corpus import parity_cases, photo, save

import sglang_mm_core
from sglang_mm_core import common

REPO = Path(__file__).resolve().parents[1]


def _jpeg_corpus() -> dict[str, bytes]:
    cases = {name: make() for name, make in parity_cases().items()}
    jpegs = {name: data for name, data in cases.items() if data[:3] == b"\xff\xd8\xff"}
    # Larger photos, every subsampling, so the SIMD upsampling and colour paths all run.
    chelsea = photo("chelsea")
    big = np.concatenate([photo("astronaut")[: chelsea.shape[0]], chelsea], axis=1)
    for sub in (0, 1, 2):
        jpegs[f"big-sub{sub}"] = save(big, "JPEG", quality=88, subsampling=sub)
    jpegs["big-progressive"] = save(big, "JPEG", quality=70, progressive=True)
    jpegs["example-astronaut"] = (REPO / "examples" / "images" / "astronaut.jpg").read_bytes()
    return jpegs


_CHILD = """
import hashlib, json, sys
from sglang_mm_core import common
out = {}
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    for exif in (True, False):
        img = common.image_decode_rgb(data, exif_orientation=exif)
        out[f"{path}|{exif}"] = [list(img.shape), hashlib.blake2b(img.tobytes()).hexdigest()]
print(json.dumps(out))
"""


def _decode_digests(paths: list[Path], env_extra: dict[str, str]) -> dict[str, list[object]]:
    env = {**os.environ, **env_extra}
    # The child imports the same extension module as this process.
    env["PYTHONPATH"] = os.pathsep.join([str(Path(sglang_mm_core.__file__).parents[1])])
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: dict[str, list[object]] = json.loads(done.stdout)
    return result


def test_this_build_has_simd() -> None:
    """The comparison below is only meaningful when the default path is the SIMD one."""
    if not os.environ.get("CI") and not any(
        (Path(d) / "nasm").is_file() for d in os.environ.get("PATH", "").split(os.pathsep)
    ):
        pytest.skip("built without nasm: no SIMD code to compare against")
    native = Path(common.__file__).with_name("_native.abi3.so")
    assert b"jsimd_idct_islow_avx2" in native.read_bytes() or b"jsimd_idct_islow_neon" in (
        native.read_bytes()
    )


@pytest.mark.parametrize("force", ["JSIMD_FORCENONE", "JSIMD_FORCESSE2"])
def test_c_paths_equal_simd(tmp_path: Path, force: str) -> None:
    corpus = _jpeg_corpus()
    paths = []
    for name, data in corpus.items():
        path = tmp_path / f"{name}.jpg"
        path.write_bytes(data)
        paths.append(path)
    default = _decode_digests(paths, {})
    forced = _decode_digests(paths, {force: "1"})
    assert len(default) == 2 * len(corpus) >= 2 * 20
    # In-process decode agrees with the child's default run (the digest is of real pixels).
    first = paths[0]
    img = common.image_decode_rgb(first.read_bytes())
    assert default[f"{first}|True"][1] == hashlib.blake2b(img.tobytes()).hexdigest()
    mismatched = [key for key in default if default[key] != forced[key]]
    assert not mismatched, f"{force}=1 decodes differently: {mismatched[:5]}"
