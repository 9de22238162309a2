"""The public surface: one front door per audience (`sglang_mm_core` for users,
`sglang_mm_core.plugin` for family authors) whose shared names are the same objects, every
exception in `sglang_mm_core.errors`, the bundled plugins and their tests on public names
only, the core importing no plugin, and no retired name or path left behind."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import sglang_mm_core
from sglang_mm_core import _native, errors, plugin
from sglang_mm_core.errors import KernelArgumentError

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_PACKAGES = sorted(ROOT.glob("plugins/*/sglang_mm_*"))
PLUGIN_TESTS = sorted(ROOT.glob("plugins/*/tests/*.py"))
#: Names both fronts offer by design: what an answer carries (and a family produces), and
#: the errors both audiences catch.
SHARED = {"CompactTensor", "Geometry", "MRope", "Rope1D", "Tensor", "VideoOptions"}


def _core_modules() -> list[str]:
    return [
        m.name
        for m in pkgutil.walk_packages(sglang_mm_core.__path__, "sglang_mm_core.")
        if "pytest_plugin" not in m.name and not m.name.endswith("__main__")
    ]


@pytest.mark.parametrize("front", [sglang_mm_core, plugin])
def test_each_front_door_resolves_sorted_and_unique(front: object) -> None:
    names = list(front.__all__)  # type: ignore[attr-defined]
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(front, name) is not None, name
    public = {n for n in vars(front) if not n.startswith("_") and n != "annotations"}
    imported_modules = {n for n in public if inspect.ismodule(getattr(front, n))}
    assert public - imported_modules <= set(names) | {"version", "PackageNotFoundError"}


def test_the_fronts_share_only_the_same_objects_by_design() -> None:
    both = set(sglang_mm_core.__all__) & set(plugin.__all__)
    error_names = set(errors.__all__)
    assert both - error_names == SHARED, both - error_names
    for name in both:
        assert getattr(sglang_mm_core, name) is getattr(plugin, name), name


def test_every_exception_lives_in_errors() -> None:
    """One module holds the hierarchy; only private helpers (underscored) live elsewhere."""
    for name in _core_modules():
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == name
                and not attr.startswith("_")
            ):
                assert name == "sglang_mm_core.errors", f"{name}.{attr} is an exception"
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.MmError), name


def test_bundled_plugins_import_only_the_public_surface() -> None:
    names = {p.name for p in PLUGIN_PACKAGES}
    assert {"sglang_mm_qwen_vl", "sglang_mm_inkling"} <= names, names
    for pkg in PLUGIN_PACKAGES:
        for path in pkg.glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if node.module == "sglang_mm_core":  # `from sglang_mm_core import plugin`
                        got = [a.name for a in node.names]
                        assert got in (["plugin"], ["hf"]), f"{path}: {node.module}"
                    elif node.module.split(".")[0] == "sglang_mm_core":
                        assert node.module in {
                            "sglang_mm_core.plugin",
                            "sglang_mm_core.common",
                            "sglang_mm_core.hf",
                        }, f"{path}: {node.module}"
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        assert not alias.name.startswith("sglang_mm_core"), f"{path}: {alias}"


def _private_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        for m in modules:
            parts = m.split(".")
            if parts[0] == "sglang_mm_core" and any(p.startswith("_") for p in parts[1:]):
                found.append(m)
    return found


def test_plugin_tests_use_public_names_only() -> None:
    assert PLUGIN_TESTS
    bad = {str(p.relative_to(ROOT)): _private_imports(p) for p in PLUGIN_TESTS}
    assert not {k: v for k, v in bad.items() if v}


def test_the_core_imports_no_plugin() -> None:
    for path in (ROOT / "sglang_mm_core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            mods = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            for m in mods:
                top = m.split(".")[0]
                assert not (top.startswith("sglang_mm_") and top != "sglang_mm_core"), (path, m)


@pytest.mark.parametrize(
    "name",
    [
        "sglang_mm_core.family",
        "sglang_mm_core.carriers",
        "sglang_mm_core.layout",
        "sglang_mm_core.positions",
        "sglang_mm_core._deprecation",
        "sglang_mm_core.compat",
    ],
)
def test_retired_modules_are_gone(name: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)


def test_retired_names_are_gone() -> None:
    for front, gone in [
        (plugin, ["deprecated_aliases", "hf_configs", "load_model_dir", "read_json_object"]),
        (sglang_mm_core, ["Family", "hookimpl", "layout_by_placeholder", "ProcessedItem"]),
    ]:
        for name in gone:
            assert not hasattr(front, name), name
    fam = plugin.Family
    for hook in ("tokens_for", "tokens_for_dimensions", "prompt_tokens_for_dimensions",
                 "check_prompt", "process_item_compact", "expected_feature_shape",
                 "spec_from_model_dir", "capabilities", "conformance_rejected_sizes"):  # fmt: skip
        assert not hasattr(fam, hook), hook


def test_the_old_thread_variable_is_not_read() -> None:
    code = (
        "import sglang_mm_core, os\n"
        "from sglang_mm_core.plugin import resolve_threads\n"
        "print(resolve_threads(None, cores=4), os.environ.get('SGLANG_MM_THREADS'))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGL_MM_", "SGLANG_MM_"))}
    res = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        env={**env, "SGL_MM_THREADS": "3"},
        timeout=120,
    )
    assert res.returncode == 0 and res.stdout == "4 None\n", res.stdout + res.stderr


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


def test_model_dir(tmp_path: Path) -> None:
    with pytest.raises(plugin.SpecError, match="not a model directory"):
        plugin.ModelDir.load(tmp_path / "missing")
    model = plugin.ModelDir.load(tmp_path)
    with pytest.raises(plugin.SpecError, match=r"preprocessor_config\.json not found in"):
        model.preprocessor_config  # noqa: B018
    (tmp_path / "preprocessor_config.json").write_text('{"a": 1}')
    (tmp_path / "config.json").write_text("[1]")
    (tmp_path / "tokenizer.json").write_text(
        '{"added_tokens": [{"id": 7, "content": "<img>"}, {"id": "x", "content": "bad"}]}'
    )
    (tmp_path / "tokenizer_config.json").write_text(
        '{"added_tokens_decoder": {"7": {"content": "<other>"}, "9": {"content": "</img>"}}}'
    )
    model = plugin.ModelDir.of(tmp_path)
    assert "config.json" in model and model.names == (
        "config.json",
        "preprocessor_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
    )
    assert model.preprocessor_config == {"a": 1} and model.get("missing.json") is None
    with pytest.raises(plugin.SpecError, match="must hold a JSON object"):
        model.config  # noqa: B018
    assert model.added_tokens() == {"<img>": 7, "<other>": 7, "</img>": 9}
    parsed = plugin.ModelDir.of({"config.json": {"b": 2}})
    assert parsed.config == {"b": 2} and parsed.root is None
    with pytest.raises(plugin.SpecError, match=r"preprocessor_config\.json not found$"):
        parsed.preprocessor_config  # noqa: B018
    assert plugin.ModelDir.of(parsed) is parsed
    with pytest.raises(plugin.SpecError, match="not int"):
        plugin.ModelDir.of(3)  # type: ignore[arg-type]


def test_model_dir_processor_settings_in_transformers_order() -> None:
    """AutoImageProcessor / AutoVideoProcessor's lookup: processor_config.json's section first,
    then (videos) video_preprocessor_config.json, then preprocessor_config.json."""
    pre = {"image_processor_type": "X", "size": 1}
    vpre = {"video_processor_type": "V", "size": 2}
    nested = {"image_processor": {"size": 3}, "video_processor": {"size": 4}}
    both = plugin.ModelDir(
        {
            "preprocessor_config.json": pre,
            "video_preprocessor_config.json": vpre,
            "processor_config.json": nested,
        }
    )
    assert both.processor_settings("image") == (
        "processor_config.json image_processor",
        {"size": 3},
    )
    assert both.processor_settings("video") == (
        "processor_config.json video_processor",
        {"size": 4},
    )
    files = plugin.ModelDir(
        {
            "preprocessor_config.json": pre,
            "video_preprocessor_config.json": vpre,
            "processor_config.json": {"image_seq_length": 1},
        }
    )
    assert files.processor_settings("image") == ("preprocessor_config.json", pre)
    assert files.processor_settings("video") == ("video_preprocessor_config.json", vpre)
    shared = plugin.ModelDir({"preprocessor_config.json": pre})
    assert shared.processor_settings("video") == ("preprocessor_config.json", pre)
    with pytest.raises(plugin.SpecError, match=r"preprocessor_config\.json not found"):
        plugin.ModelDir({"config.json": {}}).processor_settings("image")
    bad = plugin.ModelDir({"processor_config.json": {"video_processor": [1]}})
    with pytest.raises(plugin.SpecError, match="video_processor must be a JSON object"):
        bad.processor_settings("video")
