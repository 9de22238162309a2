"""The `sglang-mm` command, run as a subprocess against the toy distribution installed through
its dist-info: listings, schema, run (summary, safetensors/npz, JSONL batches), tokens, and
one-line errors."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from core_helpers import png_bytes, toy_env

from sglang_mm_core import MmInput, MRope, Registry, pipeline_from_spec
from sglang_mm_core.conformance import generated_image

SCRIPT = Path(sys.executable).with_name("sglang-mm")


def cli(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        env=toy_env("site", **env),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


@pytest.fixture
def case(tmp_path: Path) -> Path:
    """A spec, two images next to a request that names them by relative path."""
    (tmp_path / "imgs").mkdir()
    for k, size in enumerate([(21, 13), (40, 9)]):
        (tmp_path / "imgs" / f"{k}.png").write_bytes(png_bytes(generated_image(*size, seed=k)))
    (tmp_path / "spec.json").write_text(json.dumps({"family": "toy_mrope", "threads": 2}))
    (tmp_path / "request.json").write_text(
        json.dumps(
            {"rid": "x", "input_ids": [9, 5, 9, 5, 9], "images": ["imgs/0.png", "imgs/1.png"]}
        )
    )
    return tmp_path


def reference(case: Path, registry: Registry):  # type: ignore[no-untyped-def]
    images = [(case / "imgs" / f"{k}.png").read_bytes() for k in range(2)]
    with pipeline_from_spec(case / "spec.json", registry=registry) as p:
        return p.process(MmInput([9, 5, 9, 5, 9], images, rid="x"))


def test_script_is_installed() -> None:
    assert SCRIPT.is_file()
    res = cli("--version")
    assert res.returncode == 0 and res.stdout.startswith("sglang-mm ")


def test_families() -> None:
    res = cli("families")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["family", "distribution", "version", "plugin"]
    assert ["toy", "sglang-mm-toy", "0.1.0", "toy"] in [line.split() for line in lines]
    res = cli("families", SGLANG_MM_PLUGINS="")
    assert res.returncode == 0 and res.stdout.startswith("no families installed")


def test_schema() -> None:
    import jsonschema

    res = cli("schema", "toy")
    assert res.returncode == 0, res.stderr
    schema = json.loads(res.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors({"family": "toy"}))
    assert "patch" in json.dumps(schema["$defs"])


def test_run_summary(case: Path, registry: Registry) -> None:
    ref = reference(case, registry)
    res = cli("run", "--spec", str(case / "spec.json"), "--request", str(case / "request.json"))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert f"input_ids  {len(ref.input_ids)} tokens (prompt 5, 2 image(s))" in out
    assert f"MRope int64 [3x{len(ref.input_ids)}], delta {ref.positions.delta}" in out
    for k, item in enumerate(ref.items):
        s, e = ref.offsets[k]
        assert (
            f"image {k:<4} feature float32 {list(item.feature.shape)}; tokens {item.tokens} "
            f"at [{s}, {e}]; hash {item.hash:016x}; image_grid_thw int64 [1, 3]"
        ) in out
    assert "rid        x" in out


@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_run_out(case: Path, registry: Registry, suffix: str) -> None:
    ref = reference(case, registry)
    dest = case / f"out{suffix}"
    res = cli(
        "run", "--spec", "spec.json", "--request", "request.json", "--out", str(dest), cwd=case
    )
    assert res.returncode == 0, res.stderr
    if suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(dest), framework="numpy") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
            meta = f.metadata()
    else:
        with np.load(dest) as z:
            tensors = {k: z[k] for k in z.files if k != "__metadata__"}
            meta = json.loads(str(z["__metadata__"]))
    np.testing.assert_array_equal(tensors["input_ids"], ref.input_ids)
    assert isinstance(ref.positions, MRope)
    np.testing.assert_array_equal(tensors["positions"], ref.positions.positions)
    for k, item in enumerate(ref.items):
        np.testing.assert_array_equal(tensors[f"items.{k}.feature"], item.feature.array)
        np.testing.assert_array_equal(
            tensors[f"items.{k}.image_grid_thw"], item.aux["image_grid_thw"].array
        )
    assert meta["family"] == "toy_mrope" and meta["spec_fingerprint"] == ref.spec_fingerprint
    assert json.loads(meta["offsets"]) == [list(o) for o in ref.offsets]
    assert json.loads(meta["hashes"]) == ref.hashes
    assert int(meta["mrope_delta"]) == ref.positions.delta
    assert json.loads(meta["dtypes"])["items.0.feature"] == "float32"


def test_run_jsonl_batch(case: Path) -> None:
    img = (case / "imgs" / "0.png").read_bytes()
    lines = [
        {"rid": "one", "input_ids": [9, 5, 9], "images": ["imgs/0.png"]},
        {"rid": "b64", "input_ids": [9, 5, 9], "images": [base64.b64encode(img).decode()]},
        {"rid": "bad", "input_ids": [9, 5, 9], "images": ["imgs/missing.png"]},
        {"input_ids": [9, 5, 9, 5, 9], "images": ["imgs/0.png", "imgs/1.png"]},
    ]
    (case / "many.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = cli("run", "--spec", "spec.json", "--request", "many.jsonl", "--out", "o.npz", cwd=case)
    assert res.returncode == 1  # one request failed; the others still ran
    out = res.stdout
    assert "3 of 4 request(s) succeeded" in out
    assert "bad: error: " in out and "#3: " in out
    assert (case / "o.0.npz").is_file() and (case / "o.3.npz").is_file()
    assert not (case / "o.2.npz").exists()
    with np.load(case / "o.0.npz") as a, np.load(case / "o.1.npz") as b:
        np.testing.assert_array_equal(a["items.0.feature"], b["items.0.feature"])


def test_tokens(case: Path, registry: Registry) -> None:
    ref = reference(case, registry)
    res = cli("tokens", "--spec", "spec.json", "--request", "request.json", cwd=case)
    assert res.returncode == 0, res.stderr
    want = f"{len(ref.input_ids)} tokens; per image {[it.tokens for it in ref.items]}"
    assert res.stdout.strip() == want


@pytest.mark.parametrize(
    ("args", "files", "message"),
    [
        (["schema", "ghost"], {}, "SpecError: unknown family 'ghost'; installed families: "),
        (
            ["run", "--spec", "s.json", "--request", "r.json"],
            {"s.json": '{"family": "ghost"}', "r.json": "{}"},
            "SpecError: unknown family 'ghost'",
        ),
        (
            ["run", "--spec", "s.json", "--request", "r.json"],
            {"s.json": '{"family": "toy", "params": {"patch": 0}}', "r.json": "{}"},
            "SpecError: invalid spec: params.patch: Input should be greater than 0",
        ),
        (
            ["run", "--spec", "s.json", "--request", "r.json"],
            {
                "s.json": '{"family": "toy"}',
                "r.json": '{"input_ids": [9, 5], "images": ["x.png"], "extra": 1}',
            },
            "r.json: extra: Extra inputs are not permitted",
        ),
        (
            ["run", "--spec", "s.json", "--request", "r.json"],
            {"s.json": '{"family": "toy"}', "r.json": '{"input_ids": [9, 5], "images": ["x.png"]}'},
            "FetchError: image 0 (file): cannot open file",
        ),
        (
            ["run", "--spec", "s.json", "--request", "r.json"],
            {"s.json": '{"family": "toy"}', "r.json": '{"input_ids": [9, 5], "images": ["AAAA"]}'},
            "DecodeError: image 0 (base64)",
        ),
        (
            ["tokens", "--spec", "s.json", "--request", "r.json"],
            {"s.json": '{"family": "toy"}', "r.json": '{"input_ids": [], "images": []}'},
            "MmRequestError: input_ids is empty",
        ),
        (
            ["run", "--spec", "s.json", "--request", "r.json", "--out", "o.txt"],
            {"s.json": '{"family": "toy"}', "r.json": '{"input_ids": [1, 2]}'},
            "--out must end in .safetensors or .npz",
        ),
        (
            ["run", "--spec", "nope.json", "--request", "r.json"],
            {},
            "SpecError: cannot read spec file 'nope.json'",
        ),
        (
            ["run", "--spec", "s.json", "--request", "nope.json"],
            {"s.json": '{"family": "toy"}'},
            "cannot read request file 'nope.json'",
        ),
    ],
)
def test_errors_are_one_line(
    tmp_path: Path, args: list[str], files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    res = cli(*args, cwd=tmp_path)
    assert res.returncode == 1, res.stdout
    err = res.stderr.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("sglang-mm: error: ") and message in err, err


def test_usage_errors_exit_2() -> None:
    res = cli("run", "--spec", "x")
    assert res.returncode == 2 and "required" in res.stderr
