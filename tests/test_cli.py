"""The `sglang-mm` command, run as a subprocess against the toy distribution installed through
its dist-info: listings, schema, run (summary, safetensors/npz, JSONL batches), tokens, and
one-line errors."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from core_helpers import png_bytes, toy_env
from test_registry import BROKEN_ERRORS

from sglang_mm_core import MmInput, MRope, Registry, pipeline_from_spec
from sglang_mm_core.conformance import generated_image

SCRIPT = Path(sys.executable).with_name("sglang-mm")


def cli(
    *args: str, cwd: Path | None = None, sites: tuple[str, ...] = (), **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        env=toy_env("site", *sites, **env),
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


def one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command (asserting there is no traceback)."""
    assert res.returncode == 1, (res.stdout, res.stderr)
    err = res.stderr.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("sglang-mm: error: "), err
    return err.removeprefix("sglang-mm: error: ")


# -- --out is checked before any work ------------------------------------------------------------


@pytest.mark.parametrize(
    ("out", "message"),
    [
        (
            "/missing/dir/x.safetensors",
            "--out '/missing/dir/x.safetensors': folder '/missing/dir' does not exist",
        ),
        ("spec.json/x.npz", "--out 'spec.json/x.npz': 'spec.json' is not a folder"),
        ("imgs.npz", "--out 'imgs.npz' is a folder, not a file"),
        ("o.txt", "--out must end in .safetensors or .npz, got 'o.txt'"),
        ("o", "--out must end in .safetensors or .npz, got 'o'"),
    ],
)
def test_out_is_checked_before_any_work(case: Path, out: str, message: str) -> None:
    (case / "imgs.npz").mkdir()
    # the request would fail (a missing image) if it were processed: the --out error comes first
    (case / "bad.json").write_text(json.dumps({"input_ids": [9, 5], "images": ["gone.png"]}))
    for request in ("request.json", "bad.json"):
        res = cli("run", "--spec", "spec.json", "--request", request, "--out", out, cwd=case)
        assert one_line_error(res) == f"MmRequestError: {message}"
        assert res.stdout == ""
    assert sorted(p.name for p in case.iterdir()) == sorted(
        ["imgs", "imgs.npz", "spec.json", "request.json", "bad.json"]
    )


@pytest.mark.parametrize(
    ("suffix", "writer_error"),
    [
        (
            ".safetensors",
            "FileNotFoundError: [Errno 2] No such file or directory: '/proc/x.safetensors'",
        ),
        (".npz", "FileNotFoundError: [Errno 2] No such file or directory: '/proc/x.npz'"),
    ],
)
def test_a_failed_write_is_one_line(case: Path, suffix: str, writer_error: str) -> None:
    """/proc passes the up-front checks for root (an existing folder it may write to) but
    refuses new files: the writer's own error, whatever its type, becomes one line. (Without
    root the up-front check refuses the folder.)"""
    out = f"/proc/x{suffix}"
    res = cli("run", "--spec", "spec.json", "--request", "request.json", "--out", out, cwd=case)
    if os.access("/proc", os.W_OK | os.X_OK):
        want = f"MmRequestError: cannot write {out!r}: {writer_error}"
    else:
        want = f"MmRequestError: --out {out!r}: folder '/proc' is not writable"
    assert one_line_error(res).startswith(want)


def test_out_safetensors_without_the_package(case: Path) -> None:
    """safetensors made unimportable in the CLI's process (a None entry in sys.modules is how
    Python spells "not installed"): .safetensors is refused up front, .npz still works."""
    code = (
        "import sys\n"
        "sys.modules['safetensors'] = None\n"
        "from sglang_mm_core._cli import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    base = ["run", "--spec", "spec.json", "--request", "request.json", "--out"]

    def run(out: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *base, out],
            env=toy_env("site"),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=case,
        )

    assert one_line_error(run("o.safetensors")) == (
        "MmRequestError: --out .safetensors needs the safetensors package: pip install "
        "safetensors (the 'safetensors' extra of sglang-mm-core), or write .npz"
    )
    res = run("o.npz")
    assert res.returncode == 0, res.stderr
    assert (case / "o.npz").is_file() and not (case / "o.safetensors").exists()


# -- tokens refuses what run refuses, request by request ---------------------------------------


@pytest.mark.parametrize(
    ("spec", "ids", "n_images", "message"),
    [
        ("toy", [9, 9], 1, "LayoutError: prompt has 0 media placeholder(s) but 1 media item(s)"),
        ("toy", [9, 5, 5], 1, "LayoutError: prompt has 2 media placeholder(s) but 1 media item(s)"),
        (
            "toy_mrope",
            [9, 5, 9],
            2,
            "LayoutError: prompt has 1 media placeholder(s) but 2 media item(s)",
        ),
    ],
)
def test_tokens_refuses_what_run_refuses(
    case: Path, spec: str, ids: list[int], n_images: int, message: str
) -> None:
    (case / "s.json").write_text(json.dumps({"family": spec}))
    images = ["imgs/0.png", "imgs/1.png"][:n_images]
    (case / "r.json").write_text(json.dumps({"input_ids": ids, "images": images}))
    args = ["--spec", "s.json", "--request", "r.json"]
    ran = one_line_error(cli("run", *args, cwd=case))
    counted = one_line_error(cli("tokens", *args, cwd=case))
    assert ran == counted == message


def test_tokens_jsonl_reports_each_request(case: Path, registry: Registry) -> None:
    lines = [
        json.dumps({"rid": "one", "input_ids": [9, 5, 9], "images": ["imgs/0.png"]}),
        json.dumps({"rid": "nophs", "input_ids": [9, 9], "images": ["imgs/0.png"]}),
        "{not json",
        json.dumps({"rid": "gone", "input_ids": [9, 5, 9], "images": ["imgs/missing.png"]}),
        json.dumps({"input_ids": [9, 5, 9, 5], "images": ["imgs/0.png", "imgs/1.png"]}),
    ]
    (case / "many.jsonl").write_text("\n".join(lines) + "\n")
    images = [(case / "imgs" / f"{k}.png").read_bytes() for k in range(2)]
    with pipeline_from_spec(case / "spec.json", registry=registry) as p:
        one = p.count_tokens(MmInput([9, 5, 9], images[:1]))
        two = p.count_tokens(MmInput([9, 5, 9, 5], images))
    res = cli("tokens", "--spec", "spec.json", "--request", "many.jsonl", cwd=case)
    assert res.returncode == 1, res.stderr
    out = res.stdout.splitlines()
    # The missing file's path is shown shortened when long (the tmp folder's length decides
    # where it is cut): what is shown is the start of the path.
    gone = out.pop(3)
    head = "gone: error: FetchError: image 0 (file): cannot open file '"
    assert gone.startswith(head + "/") and gone.endswith(": no such file"), gone
    shown = gone.removeprefix(head).split("'")[0]
    assert len(shown) > 1 and str(case / "imgs" / "missing.png").startswith(shown), gone
    assert out == [
        f"one: {one.length} tokens; per image {one.per_item}",
        "nophs: error: LayoutError: prompt has 0 media placeholder(s) but 1 media item(s)",
        "#2: error: MmRequestError: many.jsonl:3: not valid JSON: Expecting property name "
        "enclosed in double quotes",
        f"#4: {two.length} tokens; per image {two.per_item}",
        "2 of 5 request(s) counted",
    ]


def test_run_jsonl_reports_a_bad_line_and_runs_the_rest(case: Path) -> None:
    lines = [
        json.dumps({"rid": "one", "input_ids": [9, 5, 9], "images": ["imgs/0.png"]}),
        '{"input_ids": [9, 5, 9], "images": ["imgs/0.png"], "extra": 1}',
        json.dumps({"rid": "two", "input_ids": [9, 5, 9], "images": ["imgs/1.png"]}),
    ]
    (case / "many.jsonl").write_text("\n".join(lines) + "\n")
    res = cli("run", "--spec", "spec.json", "--request", "many.jsonl", "--out", "o.npz", cwd=case)
    assert res.returncode == 1, res.stderr
    out = res.stdout.splitlines()
    assert out[1] == (
        "#1: error: MmRequestError: many.jsonl:2: extra: Extra inputs are not permitted"
    )
    assert out[0].startswith("one: ") and out[2].startswith("two: ")
    assert out[3] == "2 of 3 request(s) succeeded"
    assert (case / "o.0.npz").is_file() and (case / "o.2.npz").is_file()
    assert not (case / "o.1.npz").exists()


# -- a broken plugin is listed, and fails only the specs naming it ---------------------------------


def test_families_lists_broken_plugins(broken_plugins_site: Path) -> None:
    res = cli("families", sites=(str(broken_plugins_site),))
    assert res.returncode == 1, res.stderr
    lines = res.stdout.splitlines()
    assert ["toy", "sglang-mm-toy", "0.1.0", "toy"] in [line.split() for line in lines]
    at = lines.index("broken: 4 plugin(s) failed to load; only specs naming them fail")
    assert lines[at + 1 :] == [
        f"{name}  PluginError: {BROKEN_ERRORS[name]}" for name in sorted(BROKEN_ERRORS)
    ]
    assert not any(line.split()[:1] == ["badinit"] for line in lines[:at])


def test_broken_plugins_fail_only_specs_naming_them(case: Path, broken_plugins_site: Path) -> None:
    sites = (str(broken_plugins_site),)
    res = cli("run", "--spec", "spec.json", "--request", "request.json", cwd=case, sites=sites)
    assert res.returncode == 0, res.stderr
    res = cli("tokens", "--spec", "spec.json", "--request", "request.json", cwd=case, sites=sites)
    assert res.returncode == 0, res.stderr
    for name, error in BROKEN_ERRORS.items():
        (case / "s.json").write_text(json.dumps({"family": name}))
        res = cli("run", "--spec", "s.json", "--request", "request.json", cwd=case, sites=sites)
        assert one_line_error(res) == f"PluginError: family {name!r} is unavailable: {error}"
        assert one_line_error(cli("schema", name, sites=sites)).startswith("PluginError: ")
    res = cli("schema", "toy", sites=sites)
    assert res.returncode == 0, res.stderr


def test_usage_errors_exit_2() -> None:
    res = cli("run", "--spec", "x")
    assert res.returncode == 2 and "required" in res.stderr
