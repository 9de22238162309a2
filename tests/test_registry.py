"""The plugin registry: in-process registration, conflicts, bad hooks, and real entry-point
discovery of the toy distribution (a dist-info on sys.path in a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

import pytest
from core_helpers import toy_env
from sglang_mm_toy import ToyFamily, ToyMRopeFamily

from sglang_mm_core import Family, PluginError, Registry, hookimpl

LIST_FAMILIES = (
    "import json, sglang_mm_core as m\n"
    "try:\n"
    "    fams = m.default_registry().families()\n"
    "    print(json.dumps({n: [i.distribution, i.version, i.plugin, i.family.__module__]"
    " for n, i in fams.items()}))\n"
    "except m.MmError as e:\n"
    "    print('ERROR', type(e).__name__, e)\n"
)


def discover(*sites: str, **env: str) -> dict | str:
    out = subprocess.run(
        [sys.executable, "-c", LIST_FAMILIES],
        env=toy_env(*sites, **env),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    return out if out.startswith("ERROR") else json.loads(out)


def test_register_family_in_process(registry: Registry) -> None:
    fams = registry.families()
    assert sorted(fams) == ["toy", "toy_mrope"]
    assert fams["toy"].family is ToyFamily
    assert fams["toy"].distribution == "in-process"
    assert registry.get("toy_mrope") is ToyMRopeFamily
    assert registry.get("nope") is None


def test_register_module_style_plugin() -> None:
    class Plugin:
        @hookimpl
        def sglang_mm_families(self) -> Sequence[type[Family]]:
            return [ToyFamily]

    reg = Registry()
    name = reg.register(Plugin(), name="mine")
    assert name == "mine" and reg.families()["toy"].plugin == "mine"
    reg.unregister("mine")
    assert reg.families() == {}


def test_same_class_twice_is_not_a_conflict(registry: Registry) -> None:
    registry.register_family(ToyFamily, name="again")
    assert registry.get("toy") is ToyFamily


def test_two_families_one_name_in_process(registry: Registry) -> None:
    class Impostor(ToyFamily):
        pass

    with pytest.raises(PluginError, match=r"family 'toy' is provided by both .* and .*'rogue'"):
        registry.register_family(Impostor, name="rogue")
    assert registry.get("toy") is ToyFamily  # the failed registration was rolled back


@pytest.mark.parametrize("bad", [object, int, "toy", None])
def test_hook_returning_non_family(bad: object) -> None:
    class Plugin:
        @hookimpl
        def sglang_mm_families(self) -> list[object]:
            return [bad]

    with pytest.raises(PluginError, match="not a Family subclass"):
        Registry().register(Plugin(), name="broken")


def test_hook_that_raises() -> None:
    class Plugin:
        @hookimpl
        def sglang_mm_families(self) -> list[object]:
            raise RuntimeError("boom")

    with pytest.raises(PluginError, match=r"'broken'.*failed: RuntimeError: boom") as info:
        Registry().register(Plugin(), name="broken")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_unknown_hook_name() -> None:
    class Plugin:
        @hookimpl
        def sglang_mm_familys(self) -> list[object]:
            return []

    with pytest.raises(PluginError, match="unknown hook"):
        Registry().register(Plugin(), name="typo")


# -- real discovery through importlib.metadata ---------------------------------------------------


def test_entry_point_discovery() -> None:
    fams = discover("site")
    assert isinstance(fams, dict)
    assert fams["toy"] == ["sglang-mm-toy", "0.1.0", "toy", "sglang_mm_toy.family"]
    assert fams["toy_mrope"][0] == "sglang-mm-toy"


def test_without_the_dist_info_nothing_is_found() -> None:
    fams = discover()
    assert isinstance(fams, dict) and "toy" not in fams


@pytest.mark.parametrize(
    ("allow", "present", "absent"),
    [
        ("toy", {"toy"}, set()),
        ("", set(), {"toy"}),
        (" toy , ", {"toy"}, set()),
    ],
)
def test_allowlist(allow: str, present: set[str], absent: set[str]) -> None:
    fams = discover("site", SGLANG_MM_PLUGINS=allow)
    assert isinstance(fams, dict)
    assert present <= set(fams) and not absent & set(fams)
    if allow.strip(" ,") == "toy":
        assert set(fams) == {"toy", "toy_mrope"}
    if allow == "":
        assert fams == {}


def test_allowlist_naming_a_missing_plugin() -> None:
    out = discover("site", SGLANG_MM_PLUGINS="toy,ghost")
    assert isinstance(out, str)
    assert out.startswith("ERROR PluginError SGLANG_MM_PLUGINS names ghost")


def test_two_distributions_one_family_name() -> None:
    out = discover("site", "site_dup")
    assert isinstance(out, str) and out.startswith("ERROR PluginError")
    assert "family 'toy' is provided by both" in out
    assert "sglang-mm-toy 0.1.0" in out and "other-toy 0.2.0" in out


def test_allowlist_avoids_the_conflict() -> None:
    fams = discover("site", "site_dup", SGLANG_MM_PLUGINS="toy")
    assert isinstance(fams, dict) and fams["toy"][0] == "sglang-mm-toy"


def test_two_distributions_one_entry_point_name(tmp_path) -> None:
    info = tmp_path / "clash-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: clash\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[sglang_mm]\ntoy = sglang_mm_toy.plugin_dup\n")
    out = discover("site", str(tmp_path))
    assert isinstance(out, str)
    assert "entry point 'toy'" in out and "sglang-mm-toy 0.1.0" in out and "clash 1.0" in out


def test_plugin_that_fails_to_import(tmp_path) -> None:
    info = tmp_path / "broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[sglang_mm]\nbroken = no_such_module_xyz\n")
    out = discover(str(tmp_path))
    assert isinstance(out, str)
    assert "plugin 'broken' of broken 1.0 failed to load: ModuleNotFoundError" in out
