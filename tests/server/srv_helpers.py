"""Helpers of the server tests (images, output comparison, the host loop of embedded mode)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from core_helpers import toy_env
from PIL import Image

from sglang_mm_core import MmInput, MmOutput, Pipeline, Registry
from sglang_mm_core.plugin import MRope, Rope1D
from sglang_mm_core.server import MmServer


@dataclass
class FamilySetup:
    """The spec document the servers run, the registry it needs (None: installed plugins)
    and the in-process reference pipeline built from the same resolved spec."""

    doc: dict[str, Any]
    registry: Registry | None
    pipeline: Pipeline

    def prompt(self, n_images: int) -> list[int]:
        return list(self.pipeline.family.example_prompt(n_images))

    def request(self, images: list[bytes], rid: str | None = None) -> MmInput:
        return MmInput(input_ids=self.prompt(len(images)), images=images, rid=rid)

    def spec(self, **overrides: Any) -> dict[str, Any]:
        """The spec document with top-level sections merged with ``overrides``."""
        doc = json.loads(json.dumps(self.doc))
        for key, value in overrides.items():
            if isinstance(value, dict):
                doc[key] = {**doc.get(key, {}), **value}
            else:
                doc[key] = value
        return doc


def encode_image(array: np.ndarray, fmt: str, **kw: Any) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format=fmt, **kw)
    return buf.getvalue()


def make_image(width: int, height: int, fmt: str = "JPEG", seed: int = 0) -> bytes:
    """A photo-like test image: smooth gradients plus noise, so every codec has work."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack(
        [(x * 255) // max(1, width - 1), (y * 255) // max(1, height - 1), ((x + y) * 7) % 256],
        axis=-1,
    )
    noise = rng.integers(0, 48, size=(height, width, 3))
    arr = np.clip(base + noise, 0, 255).astype(np.uint8)
    kw: dict[str, Any] = {"quality": 90} if fmt == "JPEG" else {}
    return encode_image(arr, fmt, **kw)


def assert_same_output(got: MmOutput, want: MmOutput) -> None:
    """Bit-for-bit equality of two outputs, field by field."""
    assert got.family == want.family
    assert got.spec_fingerprint == want.spec_fingerprint
    assert got.rid == want.rid
    assert got.input_ids.dtype == np.int64
    np.testing.assert_array_equal(got.input_ids, want.input_ids)
    assert [tuple(o) for o in got.offsets] == [tuple(o) for o in want.offsets]
    assert type(got.positions) is type(want.positions)
    if isinstance(want.positions, MRope):
        assert isinstance(got.positions, MRope)
        assert got.positions.delta == want.positions.delta
        np.testing.assert_array_equal(got.positions.positions, want.positions.positions)
    else:
        assert isinstance(got.positions, Rope1D)
        assert got.positions.length == want.positions.length
    assert len(got.items) == len(want.items)
    for g, w in zip(got.items, want.items, strict=True):
        assert g.hash == w.hash
        assert g.tokens == w.tokens
        assert g.geometry == w.geometry
        assert g.feature.dtype == w.feature.dtype
        assert g.feature.array.dtype == w.feature.array.dtype
        np.testing.assert_array_equal(g.feature.array, w.feature.array)
        assert sorted(g.aux) == sorted(w.aux)
        for k in w.aux:
            assert g.aux[k].dtype == w.aux[k].dtype
            np.testing.assert_array_equal(g.aux[k].array, w.aux[k].array)


class HostLoop:
    """The host side of embedded mode on a thread: drain, then answer each request with
    ``answer(batch, i)`` -> (body, content type), or hold it while ``hold`` is set."""

    def __init__(
        self,
        srv: MmServer,
        answer: Callable[[Any, int], tuple[bytes, str]],
        max_n: int = 64,
    ) -> None:
        self.srv = srv
        self.answer = answer
        self.max_n = max_n
        self.drained: list[str] = []
        self.pushed: list[tuple[str, bool]] = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HostLoop:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                if not self.srv.wait_ingress(20):
                    continue
                batch = self.srv.drain(self.max_n)
                for i, rid in enumerate(batch.rids):
                    self.drained.append(rid)
                    body, ctype = self.answer(batch, i)
                    self.pushed.append((rid, self.srv.push_result(rid, body, ctype)))
        except BaseException as e:  # surfaced by the test
            self.errors.append(e)


def data_url(data: bytes) -> str:
    import base64

    return "data:;base64," + base64.b64encode(data).decode()


def wait_for(cond: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``cond`` until true (a state change on another thread), failing after ``timeout``."""
    import time

    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.005)


def start_serve(spec: dict[str, Any], tmp: Path, *extra: str) -> tuple[str, subprocess.Popen[str]]:
    """A real ``sglang-mm serve`` process on a free port (the toy distribution installed),
    once it serves; its URL and process."""
    url, proc, _ = start_serve_log(spec, tmp, *extra)
    return url, proc


def start_serve_log(
    spec: dict[str, Any], tmp: Path, *extra: str
) -> tuple[str, subprocess.Popen[str], Callable[[], str]]:
    """`start_serve`, and what the process writes to stderr: its URL, the process and a
    function giving the whole stderr text once the process has exited."""
    path = tmp / "spec.json"
    path.write_text(json.dumps(spec))
    env = {k: v for k, v in toy_env("site").items() if "PROXY" not in k.upper()}
    cmd = [sys.executable, "-m", "sglang_mm_core", "serve", "--spec", str(path)]
    proc = subprocess.Popen(
        [*cmd, "--port", "0", "--log-level", "info", *extra],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[str] = []
    for line in proc.stderr:  # type: ignore[union-attr]
        lines.append(line)
        if "serving family" in line:
            url = line.split(" on ")[1].split()[0]
            break
    else:
        raise AssertionError("".join(lines))
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()

    def stderr() -> str:
        proc.wait(30)
        reader.join(10)
        return "".join(lines)

    return url, proc, stderr
