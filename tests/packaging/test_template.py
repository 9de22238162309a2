"""The plugin templates as an outside author gets them: each folder copied out of the
repository and built, a wheel and an sdist, with the author's tools; then each installed into
its own fresh venv with no package index (dist/ and its wheelhouse only) and no path into the
repository, beside the core wheel: the wheel as it is (then the conformance suite runs on the
installed family), the sdist built by pip there (then the template's own tests, the
conformance suite and its parity tests, run).

The letterbox template has a Rust kernel, and its kernel crates are not on crates.io: the copy
vendors the packaged crates (`make rust-package` writes them to target/package/) with the
`.cargo/config.toml` its README gives, and its sdist carries both, so pip builds it with Cargo
offline: `mm-kernels` and `mm-pyglue` from the sdist itself, the other crates from Cargo's
local cache. The compile cache is the repository's target dir (as in test_dist.py), which
holds no source: only the crates whose sources come from the copy are compiled."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_dist import REPO, WHEELHOUSE, _clean_env, _dist_file, _fresh_venv, _run

PACKAGES = REPO / "target" / "package"
KERNEL_CRATES = ("mm-kernels", "mm-pyglue")
# The author's tools: maturin and build, as the development venv running this test has them.
MATURIN = Path(sys.executable).parent / "maturin"


@dataclass(frozen=True)
class Built:
    """A template copied out of the repository, and the wheel and sdist built from the copy."""

    name: str
    project: Path
    wheel: Path
    sdist: Path


def _copy_out(name: str, tmp: Path) -> Path:
    project = tmp / f"sglang-mm-{name}"
    shutil.copytree(
        REPO / "plugins" / f"template_{name}",
        project,
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "target", "dist", "vendor", ".cargo"),
    )
    return project


def _packaged_crates() -> list[Path]:
    crates = []
    for name in KERNEL_CRATES:
        found = sorted(PACKAGES.glob(f"{name}-*.crate"))
        assert found, f"no {name} crate in {PACKAGES}: run `make rust-package` first"
        crates.append(found[-1])
    return crates


def _vendor_kernel_crates(project: Path) -> None:
    """The README's "Vendor the kernel crates" step: the packaged crates unpacked into
    ``vendor/``, and the README's own ``.cargo/config.toml`` pointing Cargo at them."""
    section = (project / "README.md").read_text().split("## Vendor the kernel crates", 1)[1]
    config = re.search(r"```toml\n(.*?)```", section, re.S)
    assert config, "the README's vendoring section has no toml block"
    for crate in _packaged_crates():
        with tarfile.open(crate) as tar:
            tar.extractall(project / "vendor", filter="data")
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text(config.group(1))


def _maturin(args: list[str], project: Path, env: dict[str, str]) -> None:
    """A maturin command of the README, which must print no error even when it succeeds."""
    done = subprocess.run(
        [str(MATURIN), *args], cwd=project, env=env, capture_output=True, text=True, timeout=1200
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "error:" not in output, output[-3000:]


def _build(name: str, project: Path, out: Path) -> tuple[Path, Path]:
    env = _clean_env(CARGO_TARGET_DIR=str(REPO / "target"), PIP_FIND_LINKS=str(WHEELHOUSE))
    if name == "letterbox":
        _vendor_kernel_crates(project)
        manifest = ["-m", "rust/Cargo.toml", "--out", str(out)]
        _maturin(["build", "--release", *manifest], project, env)
        _maturin(["sdist", *manifest], project, env)
    else:
        # The isolated build takes hatchling from the wheelhouse; the wheel is built from
        # the sdist.
        _run([sys.executable, "-m", "build", "--outdir", str(out), str(project)], project, env, 600)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module", params=["clip", "letterbox"])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    name: str = request.param
    tmp = tmp_path_factory.mktemp(name)
    project = _copy_out(name, tmp)
    wheel, sdist = _build(name, project, tmp / "out")
    return Built(name, project, wheel, sdist)


def _install_and_test(built: Built, dist: Path, tmp: Path, env: dict[str, str]) -> None:
    python = _fresh_venv(tmp / "venv")
    core = str(_dist_file("sglang_mm_core", ".whl")) + "[conformance]"
    _run([str(python), "-m", "pip", "install", "--quiet", core, f"{dist}[test]"], tmp, env, 1800)
    code = f"import sglang_mm_{built.name} as m; print(m.__file__)"
    where = _run([str(python), "-I", "-c", code], tmp, env, 60)
    assert REPO not in Path(where.strip()).parents, f"imported from the repository: {where}"
    # The `pytest` script, as the README says: `python -m pytest` would put the project
    # folder, whose package is the uninstalled source, first on sys.path.
    pytest_script = str(python.parent / "pytest")
    out = _run([pytest_script, "-q", "-p", "no:cacheprovider", "tests"], built.project, env, 900)
    summary = out.strip().splitlines()[-1]
    assert re.match(r"\d+ passed(, \d+ warnings?)? in ", summary), out[-2000:]


def test_template_wheel_installs_and_conforms(built: Built, tmp_path: Path) -> None:
    """The wheel as a user installs it, beside the core: found through its entry point, the
    conformance suite passes (its parity tests run in the sdist's venv below)."""
    env = _clean_env()
    python = _fresh_venv(tmp_path / "venv")
    core = str(_dist_file("sglang_mm_core", ".whl")) + "[conformance]"
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    _run([*pip, core, str(built.wheel)], tmp_path, env, 900)
    cli = str(python.parent / "sglang-mm")
    out = _run([cli, "conformance", "--family", built.name, "-q"], tmp_path, env, 900)
    assert re.search(r"\b\d+ passed\b", out) and " failed" not in out, out[-2000:]


def test_template_sdist_builds_offline_and_passes_its_tests(built: Built, tmp_path: Path) -> None:
    with tarfile.open(built.sdist) as tar:
        names = tar.getnames()
    if built.name == "letterbox":
        root = built.sdist.name.removesuffix(".tar.gz")
        crates = [c.name.removesuffix(".crate") for c in _packaged_crates()]
        for carried in (".cargo/config.toml", *(f"vendor/{c}/Cargo.toml" for c in crates)):
            assert f"{root}/{carried}" in names, f"{carried} is not in the sdist: {names}"
    env = _clean_env(CARGO_TARGET_DIR=str(REPO / "target"), PIP_FIND_LINKS=str(WHEELHOUSE))
    _install_and_test(built, built.sdist, tmp_path, env)
