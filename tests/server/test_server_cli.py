"""`sglang-mm serve` refuses what it cannot honour in one line, before binding anything.

The toy family is not installed in this process, so a check that needs the spec resolved runs
the CLI in a subprocess that sees the toy distribution (tests/toy/site) as installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from core_helpers import toy_env
from srv_helpers import FamilySetup

from sglang_mm_core._cli import main


def _spec_file(tmp_path: Path, doc: dict[str, object]) -> str:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_bad_spec_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec_file(tmp_path, {"family": "no_such_family"})
    assert main(["serve", "--spec", spec, "--port", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SpecError: unknown family 'no_such_family'" in err[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "0"], "--workers must be an integer >= 1"),
        (["--queue-size", "0"], "--queue-size must be an integer >= 1"),
        (["--deadline-s", "0"], "--deadline-s must be > 0"),
    ],
)
def test_bad_settings_are_refused_naming_the_option(
    fam: FamilySetup,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    spec = _spec_file(tmp_path, fam.doc)
    assert main(["serve", "--spec", spec, "--port", "0", *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "LaunchError" in err[0] and message in err[0], err


def test_pin_cores_needs_four_cores(
    fam: FamilySetup,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cores: None, raising=False)
    spec = _spec_file(tmp_path, fam.doc)
    assert main(["serve", "--spec", spec, "--port", "0", "--pin-cores"]) == 1
    err = capsys.readouterr().err
    assert "--pin-cores" in err and "2 allowed core(s)" in err


def test_port_in_use_is_refused(fam: FamilySetup, tmp_path: Path) -> None:
    import socket

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        spec = _spec_file(tmp_path, fam.doc)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "sglang_mm_core._cli",
                "serve",
                "--spec",
                spec,
                "--port",
                f"{port}",
            ],
            env=toy_env("site"),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        busy.close()
    assert proc.returncode == 1, proc.stderr
    assert f"--host/--port 127.0.0.1:{port}: the port is already in use" in proc.stderr
