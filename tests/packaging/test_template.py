"""The plugin template as an outside author gets it: copied out of the repository, built
against the kernel crates as `cargo package` ships them (patched in through the copy's own
`.cargo/config.toml`, so no registry is needed), installed beside the core wheel into a fresh
venv, and its own tests (conformance included) run there."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

from test_dist import DIST, REPO, _clean_env, _dist_file, _fresh_venv, _run

PACKAGES = REPO / "target" / "package"


def _packaged_crate(name: str, into: Path) -> Path:
    found = sorted(PACKAGES.glob(f"{name}-*.crate"))
    assert found, f"no {name} crate in {PACKAGES}: run `make rust-package` first"
    with tarfile.open(found[-1]) as tar:
        tar.extractall(into, filter="data")
    return into / found[-1].name.removesuffix(".crate")


def test_template_builds_outside_the_repository(tmp_path: Path) -> None:
    plugin = tmp_path / "sglang-mm-square"
    shutil.copytree(
        REPO / "plugins" / "template",
        plugin,
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "target"),
    )
    crates = tmp_path / "crates"
    kernels = _packaged_crate("mm-kernels", crates)
    glue = _packaged_crate("mm-pyglue", crates)
    (plugin / ".cargo").mkdir()
    (plugin / ".cargo" / "config.toml").write_text(
        f'[patch.crates-io]\nmm-kernels = {{ path = "{kernels}" }}\n'
        f'mm-pyglue = {{ path = "{glue}" }}\n'
    )
    python = _fresh_venv(tmp_path / "venv")
    env = _clean_env(CARGO_TARGET_DIR=str(REPO / "target"))
    core = str(_dist_file("sglang_mm_core", ".whl")) + "[conformance]"
    _run([str(python), "-m", "pip", "install", "--quiet", core], tmp_path, env, 600)
    _run([str(python), "-m", "pip", "install", "--quiet", f"{plugin}[test]"], tmp_path, env, 1200)
    # The `pytest` script, as the README says: `python -m pytest` would put the source folder,
    # whose package has no built `_native`, ahead of the installed one.
    pytest = str(python.parent / "pytest")
    out = _run([pytest, "-q", "-p", "no:cacheprovider", "tests"], plugin, env, 900)
    assert " passed" in out and " failed" not in out and " skipped" not in out, out[-2000:]
    assert DIST.is_dir()
