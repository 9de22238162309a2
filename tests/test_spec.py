"""The spec document: parsing forms, every invalid field named, unknown fields refused at every
level, family decode defaults, canonical JSON, fingerprint and JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import blake3
import jsonschema
import pytest

from sglang_mm_core import (
    Registry,
    SpecError,
    load_spec,
    pipeline_from_spec,
    spec_json_schema,
)
from sglang_mm_core._spec import Limits

DOC = {"family": "toy", "params": {"patch": 4}}


@pytest.mark.parametrize("form", ["dict", "json", "bytes", "path", "pathstr"])
def test_forms(form: str, registry: Registry, tmp_path: Path) -> None:
    text = json.dumps(DOC)
    path = tmp_path / "spec.json"
    path.write_text(text)
    spec = {
        "dict": DOC,
        "json": "  " + text,
        "bytes": text.encode(),
        "path": path,
        "pathstr": str(path),
    }[form]
    resolved = load_spec(spec, registry=registry)
    assert resolved.family.name == "toy"
    assert resolved.params.patch == 4  # type: ignore[attr-defined]


def test_defaults_filled(registry: Registry) -> None:
    r = load_spec({"family": "toy"}, registry=registry)
    assert r.spec.limits == Limits()
    assert r.spec.params == {"patch": 8, "image_token_id": 5, "start_id": 3, "end_id": 4}
    assert r.spec.threads is None


@pytest.mark.parametrize(
    ("family", "decode", "want"),
    [
        ("toy", {}, ("white", True)),
        ("toy_mrope", {}, ("drop", False)),
        ("toy_mrope", {"alpha": "white"}, ("white", False)),
        ("toy", {"exif_orientation": False}, ("white", False)),
        ("toy", {"alpha": None, "exif_orientation": None}, ("white", True)),
    ],
)
def test_decode_defaults_from_family(
    family: str, decode: dict, want: tuple, registry: Registry
) -> None:
    r = load_spec({"family": family, "decode": decode}, registry=registry)
    assert (r.spec.decode.alpha, r.spec.decode.exif_orientation) == want


@pytest.mark.parametrize(
    ("doc", "fields"),
    [
        ({"family": "toy", "bogus": 1}, ["bogus"]),
        ({"family": "toy", "params": {"bogus": 1}}, ["params.bogus"]),
        ({"family": "toy", "limits": {"max_itemz": 1}}, ["limits.max_itemz"]),
        ({"family": "toy", "decode": {"alpha": "white", "gamma": 1}}, ["decode.gamma"]),
        ({"family": "toy", "fetch": {"allow_ftp": True}}, ["fetch.allow_ftp"]),
        (
            {
                "family": "toy",
                "params": {"patch": 0, "image_token_id": -1},
                "limits": {"max_items": -1},
                "threads": -2,
                "decode": {"alpha": "black"},
            },
            [
                "params.patch",
                "params.image_token_id",
                "limits.max_items",
                "threads",
                "decode.alpha",
            ],
        ),
        ({"family": "toy", "params": [1, 2]}, ["params"]),
        ({"params": {}}, ["family"]),
        ({"family": ""}, ["family"]),
        ({"family": "toy", "fetch": {"timeout_s": 0}}, ["fetch.timeout_s"]),
    ],
)
def test_invalid_fields_all_named(doc: dict, fields: list[str], registry: Registry) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(doc, registry=registry)
    msg = str(info.value)
    assert msg.startswith("invalid spec: ")
    for f in fields:
        assert f"{f}:" in msg, (f, msg)


def test_unknown_family_lists_installed(registry: Registry) -> None:
    with pytest.raises(
        SpecError, match="unknown family 'nope'; installed families: toy, toy_mrope"
    ):
        load_spec({"family": "nope"}, registry=registry)
    with pytest.raises(SpecError, match="installed families: none"):
        load_spec({"family": "nope"}, registry=Registry())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{not json", "not valid JSON"),
        (b"\xff\xfe{", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ("/no/such/spec.json", "cannot read spec file '/no/such/spec.json'"),
    ],
)
def test_bad_documents(spec: str | bytes, message: str, registry: Registry) -> None:
    with pytest.raises(SpecError, match=message):
        load_spec(spec, registry=registry)


def test_bad_json_file(tmp_path: Path, registry: Registry) -> None:
    p = tmp_path / "s.json"
    p.write_text("{oops")
    with pytest.raises(SpecError, match=r"spec file .*s.json' is not valid JSON"):
        load_spec(p, registry=registry)


def test_canonical_json_and_fingerprint(registry: Registry) -> None:
    a = load_spec({"family": "toy"}, registry=registry)
    b = load_spec(
        '{"decode": {"exif_orientation": true, "alpha": "white"}, '
        '"params": {"end_id": 4, "patch": 8}, "family": "toy"}',
        registry=registry,
    )
    assert a.canonical_json == b.canonical_json
    assert a.fingerprint == b.fingerprint
    # independent check with the blake3 package over our canonical text
    assert a.fingerprint == blake3.blake3(a.fingerprint_json.encode()).hexdigest()
    doc = json.loads(a.canonical_json)
    assert a.canonical_json == json.dumps(doc, sort_keys=True, separators=(",", ":"))
    assert set(doc) == {"family", "params", "limits", "decode", "fetch", "threads", "cache"}
    assert json.loads(a.fingerprint_json) == {
        "decode": {"alpha": "white", "exif_orientation": True, "source_modes": None},
        "family": "toy",
        "params": {"end_id": 4, "image_token_id": 5, "patch": 8, "start_id": 3},
    }


def test_fingerprint_tracks_output_defining_fields_only(registry: Registry) -> None:
    base = load_spec({"family": "toy"}, registry=registry).fingerprint
    same = [
        {"family": "toy", "threads": 0},
        {"family": "toy", "limits": {"max_items": 3}},
        {"family": "toy", "fetch": {"allow_file": False}},
    ]
    differ = [
        {"family": "toy", "params": {"patch": 9}},
        {"family": "toy", "decode": {"alpha": "drop"}},
        {"family": "toy_mrope", "decode": {"alpha": "white", "exif_orientation": True}},
    ]
    for doc in same:
        assert load_spec(doc, registry=registry).fingerprint == base, doc
    for doc in differ:
        assert load_spec(doc, registry=registry).fingerprint != base, doc


def test_json_schema_of_whole_spec(registry: Registry) -> None:
    schema = spec_json_schema(registry.get("toy"))  # type: ignore[arg-type]
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    ok = json.loads(load_spec({"family": "toy"}, registry=registry).canonical_json)
    assert not list(v.iter_errors(ok))
    assert not list(v.iter_errors({"family": "toy"}))
    bad = [
        {"family": "other"},
        {"family": "toy", "params": {"patch": 0}},
        {"family": "toy", "params": {"bogus": 1}},
        {"family": "toy", "limits": {"bogus": 1}},
        {"family": "toy", "bogus": 1},
    ]
    for doc in bad:
        assert list(v.iter_errors(doc)), doc
    assert "patch" in json.dumps(schema)


def test_pipeline_from_spec(registry: Registry) -> None:
    with pipeline_from_spec(json.dumps(DOC), registry=registry) as pipe:
        assert pipe.family.name == "toy"
        assert pipe.spec_fingerprint == load_spec(DOC, registry=registry).fingerprint
