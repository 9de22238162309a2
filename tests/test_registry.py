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

from sglang_mm_core import PluginError, Registry
from sglang_mm_core.plugin import Family, hookimpl

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


LIST_BROKEN = (
    "import json, sys, sglang_mm_core as m\n"
    "reg = m.default_registry()\n"
    "broken = [[b.plugin, b.distribution, b.version, list(b.families), type(b.error).__name__,"
    " str(b.error)] for b in reg.broken(probe=True)]\n"
    "got = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        cls = reg.get(name)\n"
    "        got[name] = cls and cls.__name__\n"
    "    except m.PluginError as e:\n"
    "        got[name] = 'PluginError: ' + str(e)\n"
    "print(json.dumps({'families': sorted(reg.families()), 'broken': broken, 'get': got}))\n"
)

BROKEN_ERRORS = {
    "brokenimport": "plugin 'brokenimport' of sglang-mm-brokenimport 0.1.0 failed to load: "
    "ModuleNotFoundError: No module named 'sglang_mm_no_such_dependency'",
    "malformed": "plugin 'malformed' of sglang-mm-malformed 0.2.0: malformed entry point "
    "malformed = 'sglang_mm_malformed:plugin:extra' (expected 'module' or 'module:attribute')",
    "badinit": "family 'badinit' of sglang-mm-badinit 0.3.0 (plugin 'badinit') cannot be built "
    "from its default params: RuntimeError: weights file missing",
    "badhook": "plugin 'badhook' of sglang-mm-badhook 0.4.0: sglang_mm_families() failed: "
    "ValueError: no config found",
}


def discover_broken(*sites: str, names: Sequence[str] = (), **env: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", LIST_BROKEN, *names],
        env=toy_env(*sites, **env),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return json.loads(out)


def test_broken_plugins_are_listed_and_hide_nothing(broken_plugins_site) -> None:
    names = [*BROKEN_ERRORS, "toy", "ghost"]
    got = discover_broken("site", str(broken_plugins_site), names=names)
    assert {"toy", "toy_mrope"} <= set(got["families"])
    assert not set(BROKEN_ERRORS) & set(got["families"])
    assert got["broken"] == [
        ["badhook", "sglang-mm-badhook", "0.4.0", [], "PluginError", BROKEN_ERRORS["badhook"]],
        [
            "badinit",
            "sglang-mm-badinit",
            "0.3.0",
            ["badinit"],
            "PluginError",
            BROKEN_ERRORS["badinit"],
        ],
        [
            "brokenimport",
            "sglang-mm-brokenimport",
            "0.1.0",
            [],
            "PluginError",
            BROKEN_ERRORS["brokenimport"],
        ],
        [
            "malformed",
            "sglang-mm-malformed",
            "0.2.0",
            [],
            "PluginError",
            BROKEN_ERRORS["malformed"],
        ],
    ]
    # only a lookup of a broken family fails, with the error naming its distribution
    for name, error in BROKEN_ERRORS.items():
        assert got["get"][name] == f"PluginError: family {name!r} is unavailable: {error}"
    assert got["get"]["toy"] == "ToyFamily"
    assert got["get"]["ghost"] is None  # unknown: None, as before


def test_family_that_cannot_be_built_fails_on_first_lookup(broken_plugins_site) -> None:
    got = discover_broken("site", str(broken_plugins_site), names=["badinit"])
    assert got["get"]["badinit"].endswith(BROKEN_ERRORS["badinit"])
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sglang_mm_core as m\n"
            "try:\n"
            "    m.default_registry().get('badinit')\n"
            "except m.PluginError as e:\n"
            "    print(e, '|', type(e.__cause__).__name__)\n",
        ],
        env=toy_env(str(broken_plugins_site)),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    assert out == "family 'badinit' is unavailable: " + BROKEN_ERRORS["badinit"] + " | RuntimeError"


def test_plugin_that_fails_to_import(tmp_path) -> None:
    info = tmp_path / "broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[sglang_mm]\nbroken = no_such_module_xyz\n")
    fams = discover("site", str(tmp_path))  # the others are still found
    assert isinstance(fams, dict) and "toy" in fams and "broken" not in fams
    got = discover_broken(str(tmp_path), names=["broken"])
    assert got["get"]["broken"] == (
        "PluginError: family 'broken' is unavailable: plugin 'broken' of broken 1.0 failed to "
        "load: ModuleNotFoundError: No module named 'no_such_module_xyz'"
    )


def test_family_init_validates_its_params() -> None:
    # The base class keeps a Params instance, validates a dict or another FamilyParams, and
    # gives the defaults for None: a family built by hand is checked as one from a spec.
    from pydantic import ValidationError
    from sglang_mm_toy import ToyFamily

    default = ToyFamily()
    assert type(default.params) is ToyFamily.Params
    assert ToyFamily(default.params).params is default.params
    assert ToyFamily(default.params.model_dump()).params == default.params
    with pytest.raises(ValidationError, match="no_such_field"):
        ToyFamily({"no_such_field": 1})
