"""The distributions as a user gets them: `make dist`'s wheels and sdists installed into fresh
venvs outside the repository, with no package index (dist/ and its wheelhouse only, so these
tests reach no network), then the README quickstart and the conformance suite run there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "dist"
WHEELHOUSE = DIST / "wheelhouse"
PLUGINS = sorted(p.name for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file())
#: The family plugins a user installs (the templates are folders to copy, tested on their own).
FAMILIES = [name for name in PLUGINS if not name.startswith("template_")]
#: Every shipped distribution beside the core, by its package name's suffix: the families and
#: the SGLang drop-in (compat/sglang).
SHIPPED = [*FAMILIES, "sglang"]


def _dist_file(name: str, suffix: str) -> Path:
    found = sorted(DIST.glob(f"{name}-*{suffix}"))
    assert found, f"{name}*{suffix} is missing from {DIST}: run `make dist wheelhouse` first"
    return found[-1]


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH, no repository on the path, no index."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL"))}
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=f"{DIST} {WHEELHOUSE}", CARGO_NET_OFFLINE="true")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{' '.join(cmd[:4])} ... exited {done.returncode}\n{done.stdout[-3000:]}\n"
        f"{done.stderr[-3000:]}"
    )
    return done.stdout


def _fresh_venv(where: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    return where / "bin" / "python"


def _readme_quickstart() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("## Quickstart", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README.md has no python block under its Quickstart heading"
    return match.group(1)


def _user_folder(tmp: Path) -> Path:
    """A folder of the user's own, with the image the quickstart names."""
    work = tmp / "work"
    (work / "examples" / "images").mkdir(parents=True)
    shutil.copy(REPO / "examples/images/astronaut.jpg", work / "examples/images/astronaut.jpg")
    return work


def _check_installed_outside_repo(python: Path, work: Path, env: dict[str, str]) -> None:
    where = _run(
        [str(python), "-I", "-c", "import sglang_mm_core as m; print(m.__file__)"], work, env, 60
    )
    assert REPO not in Path(where.strip()).parents, f"imported from the repository: {where}"


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("wheels")
    python = _fresh_venv(tmp / "venv")
    env = _clean_env()
    wheels = [str(_dist_file("sglang_mm_core", ".whl")) + "[conformance,safetensors]"]
    wheels += [str(_dist_file(f"sglang_mm_{name}", ".whl")) for name in SHIPPED]
    _run([str(python), "-m", "pip", "install", "--quiet", *wheels], tmp, env, 600)
    work = _user_folder(tmp)
    _check_installed_outside_repo(python, work, env)
    return python, work, env


def test_readme_quickstart_runs_from_the_wheels(
    wheel_venv: tuple[Path, Path, dict[str, str]],
) -> None:
    python, work, env = wheel_venv
    code = _readme_quickstart() + "\nprint('QUICKSTART', out.input_ids.shape[0], len(out.items))\n"
    out = _run([str(python), "-I", "-c", code], work, env, 300)
    tokens, items = out.split("QUICKSTART", 1)[1].split()
    assert int(items) == 1 and int(tokens) > 8


def test_families_lists_every_shipped_plugin(
    wheel_venv: tuple[Path, Path, dict[str, str]],
) -> None:
    python, work, env = wheel_venv
    out = _run([str(python.parent / "sglang-mm"), "families"], work, env, 120)
    for name in FAMILIES:
        assert name in out, out


def test_the_sglang_drop_in_runs_from_the_wheels(
    wheel_venv: tuple[Path, Path, dict[str, str]],
) -> None:
    """The drop-in's distribution brings what it needs: one import, then SGLang's calls."""
    python, work, env = wheel_venv
    code = (
        "import json, sglang_mm_sglang as mm\n"
        "data = open('examples/images/astronaut.jpg', 'rb').read()\n"
        "spec = json.dumps({'family': 'qwen_vl', 'image_token_id': 151655, 'patch_size': 14,\n"
        "    'merge_size': 2, 'temporal_patch_size': 2, 'min_pixels': 3136,\n"
        "    'max_pixels': 12845056, 'image_mean': [0.5] * 3, 'image_std': [0.5] * 3})\n"
        "values, grid = mm.qwen_vl.preprocess(data, spec)\n"
        "h, w, bits = mm.inkling.decode_patchify(data, 40)\n"
        "print('DROPIN', grid, values.shape[0] > 0, bits.dtype)\n"
    )
    out = _run([str(python), "-I", "-c", code], work, env, 300)
    assert "DROPIN (1, " in out and "True uint16" in out, out


def test_transformers_stays_optional_in_the_wheels(
    wheel_venv: tuple[Path, Path, dict[str, str]],
) -> None:
    """Without the extra ``transformers`` (not installed here) the families load without
    importing it, and ``sglang_mm_core.hf`` says which extra it needs."""
    python, work, env = wheel_venv
    code = (
        "import sys\n"
        "import sglang_mm_core as mm\n"
        "assert len(mm.default_registry().families()) >= 5\n"
        "assert 'transformers' not in sys.modules, 'a plugin imported transformers'\n"
        "try:\n"
        "    import sglang_mm_core.hf\n"
        "except ImportError as e:\n"
        "    print('NOHF', e)\n"
    )
    out = _run([str(python), "-I", "-c", code], work, env, 120)
    assert "NOHF" in out and "sglang-mm-core[transformers]" in out, out


@pytest.mark.parametrize("family", FAMILIES)
def test_conformance_passes_from_the_wheels(
    wheel_venv: tuple[Path, Path, dict[str, str]], family: str
) -> None:
    python, work, env = wheel_venv
    out = _run(
        [str(python.parent / "sglang-mm"), "conformance", "--family", family], work, env, 900
    )
    assert re.search(r"\b\d+ passed\b", out) and " failed" not in out, out[-2000:]


def test_every_distribution_builds_from_its_sdist(tmp_path: Path) -> None:
    """pip builds every sdist itself (isolated build envs: maturin, cmake and hatchling from
    the wheelhouse, crates from cargo's local cache): the core and the Inkling plugin compile
    their Rust, the families composed of core kernels and the drop-in are pure Python. The
    compile cache is the repository's target dir, so only the crates whose sources come from
    the sdists are compiled again."""
    python = _fresh_venv(tmp_path / "venv")
    env = _clean_env(CARGO_TARGET_DIR=str(REPO / "target"))
    sdists = [str(_dist_file("sglang_mm_core", ".tar.gz")) + "[conformance]"]
    sdists += [str(_dist_file(f"sglang_mm_{name}", ".tar.gz")) for name in SHIPPED]
    _run(
        [str(python), "-m", "pip", "install", "--quiet", *sdists],
        tmp_path,
        {**env, "PIP_FIND_LINKS": str(WHEELHOUSE)},  # not dist/: its wheels must not be taken
        1800,
    )
    work = _user_folder(tmp_path)
    _check_installed_outside_repo(python, work, env)
    meta = _run([str(python), "-m", "pip", "show", "-f", "sglang-mm-core"], work, env, 60)
    assert "_native" in meta
    families = ["--family", "qwen_vl", "--family", "inkling"]
    out = _run(
        [str(python.parent / "sglang-mm"), "conformance", *families],
        work,
        env,
        900,
    )
    assert re.search(r"\b\d+ passed\b", out) and " failed" not in out, out[-2000:]
