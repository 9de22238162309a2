"""The public surface: what `sglang_mm_core.plugin` offers, that the bundled plugins import
nothing else of the core, and that every retired path or name still works for one release with
a `DeprecationWarning` (module paths, `spec.pipeline_from_spec`, the ``SGL_MM_`` prefix)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import sglang_mm_core
from sglang_mm_core import _native, plugin
from sglang_mm_core.driver import pipeline_from_spec
from sglang_mm_core.errors import KernelArgumentError

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_PACKAGES = sorted(ROOT.glob("plugins/*/sglang_mm_*"))
MOVED_MODULES = ["carriers", "family", "layout", "positions"]


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    full = {k: v for k, v in os.environ.items() if not k.startswith(("SGL_MM_", "SGLANG_MM_"))}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


def test_plugin_all_resolves_and_is_sorted() -> None:
    assert len(plugin.__all__) == len(set(plugin.__all__))
    for name in plugin.__all__:
        assert getattr(plugin, name) is not None, name
    assert plugin.hookimpl is sglang_mm_core.hookimpl
    assert plugin.Family is sglang_mm_core.Family


def test_bundled_plugins_import_only_the_public_surface() -> None:
    names = {p.name for p in PLUGIN_PACKAGES}
    assert {"sglang_mm_qwen_vl", "sglang_mm_inkling"} <= names, names
    for pkg in PLUGIN_PACKAGES:
        for path in pkg.glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if node.module == "sglang_mm_core":  # `from sglang_mm_core import plugin`
                        assert [a.name for a in node.names] == ["plugin"], f"{path}: {node.module}"
                    elif node.module.split(".")[0] == "sglang_mm_core":
                        assert node.module == "sglang_mm_core.plugin", f"{path}: {node.module}"
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        assert not alias.name.startswith("sglang_mm_core"), f"{path}: {alias}"


def test_no_deprecation_warning_from_our_own_imports() -> None:
    """Every module of the core and both plugins imports without touching a retired path."""
    code = (
        "import pkgutil, importlib, sglang_mm_core\n"
        "for m in pkgutil.walk_packages(sglang_mm_core.__path__, 'sglang_mm_core.'):\n"
        f"    if m.name.rsplit('.', 1)[-1] in {MOVED_MODULES!r} or 'pytest_plugin' in m.name:\n"
        "        continue\n"
        "    importlib.import_module(m.name)\n"
        "import sglang_mm_qwen_vl, sglang_mm_qwen_vl.plugin, sglang_mm_inkling.plugin\n"
        "print('ok')\n"
    )
    res = run_python(code)
    assert res.returncode == 0 and res.stdout == "ok\n", res.stderr


@pytest.mark.parametrize("module", MOVED_MODULES)
def test_old_module_paths_warn_and_reexport(module: str) -> None:
    name = f"sglang_mm_core.{module}"
    sys.modules.pop(name, None)
    want = rf"module {name} is deprecated.*; import from sglang_mm_core"
    with pytest.warns(DeprecationWarning, match=want):
        old = importlib.import_module(name)
    private = importlib.import_module(f"sglang_mm_core._{module}")
    assert old.__all__ == private.__all__
    for attr in old.__all__:
        assert getattr(old, attr) is getattr(private, attr), attr


def test_pipeline_from_spec_moved_to_the_driver() -> None:
    from sglang_mm_core import spec

    assert sglang_mm_core.pipeline_from_spec is pipeline_from_spec
    with pytest.warns(DeprecationWarning, match=r"spec\.pipeline_from_spec is deprecated"):
        assert spec.pipeline_from_spec is pipeline_from_spec
    with pytest.raises(AttributeError):
        spec.no_such_name  # noqa: B018


def test_deprecated_thread_variable_still_works() -> None:
    code = (
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as got:\n"
        "    import sglang_mm_core\n"
        "from sglang_mm_core.driver import resolve_threads\n"
        "print(resolve_threads(None), [str(w.message) for w in got])\n"
    )
    res = run_python(code, SGL_MM_THREADS="3")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("3 ["), res.stdout
    assert "$SGL_MM_THREADS is deprecated" in res.stdout and "use $SGLANG_MM_THREADS" in res.stdout
    # The new name wins when both are set.
    res = run_python(code, SGL_MM_THREADS="3", SGLANG_MM_THREADS="2")
    assert res.returncode == 0 and res.stdout.startswith("2 ["), res.stdout + res.stderr
    assert "$SGLANG_MM_THREADS is set too and wins" in res.stdout
    # Without the old name nothing warns (the interpreter runs with warnings as errors).
    res = run_python("import sglang_mm_core", SGLANG_MM_THREADS="2")
    assert res.returncode == 0, res.stderr


def test_pixel_limit_is_pillows_bomb_threshold() -> None:
    # Pillow raises DecompressionBombError above twice its MAX_IMAGE_PIXELS warning threshold.
    assert Image.MAX_IMAGE_PIXELS is not None
    assert plugin.DEFAULT_MAX_PIXELS == _native.DEFAULT_MAX_PIXELS == 2 * Image.MAX_IMAGE_PIXELS
    assert sglang_mm_core.Limits().max_image_pixels == plugin.DEFAULT_MAX_PIXELS
    assert sglang_mm_core.Limits().max_image_side == plugin.DEFAULT_MAX_SIDE == 65_535


def test_as_rgb() -> None:
    arr = np.zeros((4, 5, 3), np.uint8)
    assert plugin.as_rgb(arr) is arr
    view = np.zeros((4, 10, 3), np.uint8)[:, ::2]
    out = plugin.as_rgb(view)
    assert out.flags.c_contiguous and out.shape == (4, 5, 3)
    np.testing.assert_array_equal(out, view)
    for bad, text in (
        (np.zeros((4, 5, 3), np.float32), "got float32 [4, 5, 3]"),
        (np.zeros((4, 5), np.uint8), "got uint8 [4, 5]"),
        (np.zeros((4, 5, 4), np.uint8), "got uint8 [4, 5, 4]"),
        ("not an image", "got <U12 []"),
    ):
        with pytest.raises(KernelArgumentError, match=r"RGB uint8 array of shape \[h, w, 3\]") as e:
            plugin.as_rgb(bad)
        assert str(e.value).endswith(text)


def test_hf_configs(tmp_path: Path) -> None:
    pp, cfg = {"a": 1}, {"b": 2}
    assert plugin.hf_configs(pp, cfg) == (pp, cfg)
    with pytest.raises(plugin.SpecError, match="not a model directory"):
        plugin.hf_configs(tmp_path / "missing")
    with pytest.raises(plugin.SpecError, match="not a mix"):
        plugin.hf_configs(tmp_path, cfg)
    with pytest.raises(plugin.SpecError, match=r"needs config\.json"):
        plugin.hf_configs(pp)
    with pytest.raises(plugin.SpecError, match=r"preprocessor_config\.json not found"):
        plugin.hf_configs(tmp_path)
    (tmp_path / "preprocessor_config.json").write_text('{"a": 1}')
    (tmp_path / "config.json").write_text("[1]")
    with pytest.raises(plugin.SpecError, match="must hold a JSON object"):
        plugin.hf_configs(tmp_path)
    (tmp_path / "config.json").write_text('{"b": 2}')
    assert plugin.hf_configs(tmp_path) == (pp, cfg)
