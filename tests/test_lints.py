"""Every crate is linted alike: the core's crates inherit the workspace's lint tables, and each
plugin crate states the same tables itself (not ``workspace = true``), so that its sdist, built
outside this workspace, is linted as it is here. `make lint` runs clippy with them on all."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def _toml(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_every_workspace_crate_has_the_workspace_lints() -> None:
    root = _toml(ROOT / "Cargo.toml")
    want = root["workspace"]["lints"]
    assert want["rust"]["unsafe_op_in_unsafe_fn"] == "deny"
    assert want["clippy"]["undocumented_unsafe_blocks"] == "deny"
    members = root["workspace"]["members"]
    plugin_crates = [m for m in members if m.startswith("plugins/")]
    assert plugin_crates, members
    for member in members:
        lints = _toml(ROOT / member / "Cargo.toml").get("lints")
        assert lints is not None, f"{member} has no [lints]"
        if member.startswith("plugins/"):
            assert lints == want, f"{member}: {lints} (plugin crates state the tables themselves)"
        else:
            assert lints == {"workspace": True}, f"{member}: {lints}"


def test_no_plugin_crate_is_left_out_of_the_workspace() -> None:
    members = set(_toml(ROOT / "Cargo.toml")["workspace"]["members"])
    for manifest in ROOT.glob("plugins/*/rust/Cargo.toml"):
        assert str(manifest.parent.relative_to(ROOT)) in members, manifest
