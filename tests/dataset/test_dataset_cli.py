"""`sglang-mm dataset` as a user runs it: a real subprocess killed mid-job and rerun, bad
manifests and specs as one typed line and a non-zero exit, and a clear error when the
dataset extra is missing (the core still imports without it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from core_helpers import toy_env
from ds_helpers import LAYOUT, Corpus, shard_bytes

from sglang_mm_core._cli import main

BIN = Path(sys.executable).with_name("sglang-mm")


def _args(corpus: Corpus, out: Path, spec: Path) -> list[str]:
    return [
        "dataset",
        str(corpus.jsonl),
        "--spec",
        str(spec),
        "--out",
        str(out),
        "--shard-rows",
        str(LAYOUT["shard_rows"]),
        "--row-group-rows",
        str(LAYOUT["row_group_rows"]),
        "--no-progress",
    ]


@pytest.fixture
def qwen_spec_file(corpus: Corpus, tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(corpus.qwen_spec))
    return path


def test_killed_job_resumes_to_the_same_bytes(
    corpus: Corpus, local_qwen: Path, qwen_spec_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    # one thread, one row in flight: slow enough that the kill lands mid-job
    cmd = [str(BIN), *_args(corpus, out, qwen_spec_file), "--threads", "0", "--rows-in-flight", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = out / "part-00000.parquet"
    deadline = time.monotonic() + 60
    while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    total = len(shard_bytes(local_qwen))
    assert 1 <= len(list(out.glob("part-*.parquet"))) < total  # killed mid-job
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert "already done" in rerun.stdout
    assert not list(out.glob(".*.tmp"))
    assert shard_bytes(out) == shard_bytes(local_qwen)


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str], *expected: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err
    line = err.strip()
    assert "\n" not in line and line.startswith("sglang-mm: error: "), err
    for text in expected:
        assert text in line, line
    return line


def test_bad_manifests(
    capsys: pytest.CaptureFixture[str], corpus: Corpus, qwen_spec_file: Path, tmp_path: Path
) -> None:
    base = _args(corpus, tmp_path / "out", qwen_spec_file)
    missing = str(tmp_path / "nope.jsonl")
    _fails(capsys, [base[0], missing, *base[2:]], "ManifestError", "does not exist", missing)
    csv = tmp_path / "m.csv"
    csv.write_text("id,input_ids\n")
    _fails(capsys, [base[0], str(csv), *base[2:]], "ManifestError", "unknown format")
    not_parquet = tmp_path / "m.parquet"
    not_parquet.write_bytes(b"PAR1 but not really")
    _fails(
        capsys, [base[0], str(not_parquet), *base[2:]], "ManifestError", "not a readable Parquet"
    )
    import pyarrow as pa
    import pyarrow.parquet as pq

    no_ids = tmp_path / "no_ids.parquet"
    pq.write_table(pa.table({"id": ["a"], "images": [["x.jpg"]]}), no_ids)
    _fails(capsys, [base[0], str(no_ids), *base[2:]], "ManifestError", "no input_ids column")


def test_bad_spec_and_options(
    capsys: pytest.CaptureFixture[str], corpus: Corpus, qwen_spec_file: Path, tmp_path: Path
) -> None:
    base = _args(corpus, tmp_path / "out", qwen_spec_file)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"family": "no_such_family"}))
    _fails(capsys, [*base[:3], str(bad), *base[4:]], "SpecError", "unknown family")
    bad.write_text("{not json")
    _fails(capsys, [*base[:3], str(bad), *base[4:]], "SpecError", "not valid JSON")
    _fails(capsys, [*base, "--rows-in-flight", "0"], "DatasetError", "rows_in_flight")
    _fails(capsys, [*base, "--address", "127.0.0.1:1"], "DatasetError", "--engine ray")
    # a family without the compact form, asked for it: every shipped family offers it, so
    # the toy family, seen as installed by a subprocess
    toy = tmp_path / "toy.json"
    toy.write_text(json.dumps({"family": "toy"}))
    argv = [*base[:3], str(toy), *base[4:], "--features", "compact"]
    proc = subprocess.run(
        [sys.executable, "-m", "sglang_mm_core", *argv],
        capture_output=True,
        text=True,
        env=toy_env("site"),
        timeout=120,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "DatasetError" in proc.stderr and "does not offer the compact form" in proc.stderr
    # the folder is not a folder
    blocker = tmp_path / "file"
    blocker.write_text("")
    _fails(capsys, [*base[:5], str(blocker), *base[6:]], "DatasetError", "not a folder")


def test_missing_extra_is_named(corpus: Corpus, qwen_spec_file: Path, tmp_path: Path) -> None:
    """Without pyarrow the core imports, and the job fails naming the extra to install."""
    code = (
        "import sys; sys.modules['pyarrow'] = None; sys.modules['ray'] = None\n"
        "import sglang_mm_core, sglang_mm_core.dataset\n"
        "from sglang_mm_core._cli import main\n"
        f"sys.exit(main({_args(corpus, tmp_path / 'out', qwen_spec_file)!r}))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert "MissingExtraError" in r.stderr
    assert "pip install 'sglang-mm-core[dataset]'" in r.stderr
    # pyarrow there, Ray missing: the Ray engine names the ray extra
    ray_code = code.replace("sys.modules['pyarrow'] = None; ", "").replace(
        "'dataset',", "'dataset', '--engine', 'ray',"
    )
    r = subprocess.run([sys.executable, "-c", ray_code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "pip install 'sglang-mm-core[ray]'" in r.stderr, r.stderr
