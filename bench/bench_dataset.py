"""The dataset job: samples/s of 1080p JPEG samples (Qwen2-VL, compact features) on the local
engine with 2 threads against the Ray engine with 2 CPUs of actors (goal: Ray within 25% of
local); `--count-only` images/s on one core from a Parquet file of image bytes (goal: 20,000
images/s/core), with the header probe alone in microseconds; and the peak RSS of a 10,000-row
job against a 1,000-row one (memory bounded by rows in flight, not by the manifest).

The engines' rates run from the first row to the last (Ray's actor start, a fixed cost per
job, is left out); the runs are interleaved and the medians printed.

Run: .venv/bin/python bench/bench_dataset.py [--quick]"""

from __future__ import annotations

import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _images import mosaic
from PIL import Image

from sglang_mm_core import MmInput, _native, pipeline_from_spec
from sglang_mm_core.dataset import Options, run

QUICK = "--quick" in sys.argv
ROOT = Path(__file__).resolve().parents[1]
SPEC = json.loads((ROOT / "examples/qwen2_vl/spec.json").read_text())
PROMPT = [151644, 872, 198, 151652, 151655, 151653, 3838, 374, 419, 30, 151645, 198]


def write_manifest(folder: Path, n: int, names: list[str]) -> Path:
    path = folder / f"manifest_{n}.jsonl"
    with path.open("w") as f:
        for i in range(n):
            f.write(
                json.dumps({"id": f"r{i}", "input_ids": PROMPT, "images": [names[i % len(names)]]})
            )
            f.write("\n")
    return path


def timed_job(manifest: Path, out: Path, opts: Options) -> float:
    """Wall time of a whole job (start, rows, shards)."""
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    run(manifest, SPEC, out, opts)
    return time.perf_counter() - t


def steady_rate(manifest: Path, opts: Options) -> float:
    """Samples/s of an engine from its first row to its last: the rows stream as the job's
    writer would take them; the engine's start (Ray's actors, the pools) is left out."""
    from sglang_mm_core.dataset._job import _engine
    from sglang_mm_core.dataset._manifest import Manifest
    from sglang_mm_core.dataset._process import resolve_spec

    man = Manifest(manifest)
    engine = _engine(opts, resolve_spec(SPEC), man)
    try:
        rows = engine.rows([(0, man.num_rows)])
        next(rows)
        t = time.perf_counter()
        n = sum(1 for _ in rows)
        return n / (time.perf_counter() - t)
    finally:
        engine.close()


def throughput(tmp: Path) -> None:
    import ray

    n_img = 8
    names = []
    for k in range(n_img):
        (tmp / f"p{k}.jpg").write_bytes(mosaic((1920, 1080), 4, 3, first=k))
        names.append(f"p{k}.jpg")
    n = 24 if QUICK else 64
    manifest = write_manifest(tmp, n, names)
    # 2 CPUs for the actors and one logical CPU for Ray Data's read tasks
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, configure_logging=False)
    engines = {
        "local, 2 threads": Options(threads=2),
        "ray, 2 CPUs": Options(engine="ray", threads=2),
    }
    rates: dict[str, list[float]] = {k: [] for k in engines}
    for _ in range(2 if QUICK else 3):
        for name, opts in engines.items():
            rates[name].append(steady_rate(manifest, opts))
    ray.shutdown()
    local, ray_rate = (statistics.median(v) for v in rates.values())
    print(f"1080p JPEG samples, Qwen2-VL, compact ({n} rows, first row to last):")
    for name, v in rates.items():
        runs = ", ".join(f"{x:.2f}" for x in v)
        print(f"  {name:18s} {statistics.median(v):6.2f} samples/s  (runs: {runs})")
    overhead = 100 * (1 - ray_rate / local)
    print(f"  ray / local = {ray_rate / local:.2f}  (overhead {overhead:.0f}%; goal <= 25%)")


def small_jpeg(rng: np.random.Generator, w: int, h: int) -> bytes:
    px = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(px).save(buf, format="JPEG", quality=80)
    return buf.getvalue()


def count_only(tmp: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    distinct = [
        small_jpeg(rng, int(rng.integers(64, 640)), int(rng.integers(64, 480))) for _ in range(64)
    ]
    n = 5_000 if QUICK else 20_000
    rows = {
        "id": [f"r{i}" for i in range(n)],
        "input_ids": [PROMPT] * n,
        "images": [[distinct[i % len(distinct)]] for i in range(n)],
    }
    path = tmp / "bytes.parquet"
    # written as a dataset of distinct images would be: no dictionary of repeated values
    pq.write_table(pa.table(rows), path, row_group_size=1024, use_dictionary=False)
    mb = path.stat().st_size / 1e6
    rates = []
    for _ in range(3):
        t = timed_job(
            path,
            tmp / "counts",
            Options(count_only=True, threads=0, shard_rows=10_000, progress=False),
        )
        rates.append(n / t)
    rate = statistics.median(rates)
    # the pieces, per image: the header probe alone, then count_tokens on bytes
    data = mosaic((1920, 1080), 4, 3)
    reps = 20_000
    t = time.perf_counter()
    for _ in range(reps):
        _native.image_dimensions(data, False, 178956970, 65500)
    probe_us = (time.perf_counter() - t) / reps * 1e6
    t = time.perf_counter()
    for d in distinct * (reps // len(distinct)):
        _native.image_dimensions(d, False, 178956970, 65500)
    probe_mix_us = (time.perf_counter() - t) / (len(distinct) * (reps // len(distinct))) * 1e6
    with pipeline_from_spec({**SPEC, "threads": 0}) as pipe:
        req = MmInput(PROMPT, [data])
        t = time.perf_counter()
        for _ in range(reps):
            pipe.count_tokens(req)
        count_us = (time.perf_counter() - t) / reps * 1e6
    from sglang_mm_core.dataset import Manifest

    t = time.perf_counter()
    for _ in Manifest(path).samples():
        pass
    read_us = (time.perf_counter() - t) / n * 1e6
    print(f"--count-only, Parquet of image bytes ({n} rows, {mb:.0f} MB), one core:")
    print(
        f"  job                 {rate:9.0f} images/s  ({1e6 / rate:.1f} us/image; goal >= 20,000/s)"
    )
    print(f"  header probe alone  {probe_us:9.2f} us (1080p JPEG), {probe_mix_us:.2f} us (mix)")
    print(f"  count_tokens        {count_us:9.2f} us per one-image request on bytes")
    print(f"  manifest read       {read_us:9.2f} us per row (Parquet to samples)")


def peak_rss(tmp: Path) -> None:
    rng = np.random.default_rng(3)
    names = []
    for k in range(16):
        (tmp / f"m{k}.jpg").write_bytes(small_jpeg(rng, 160 + 8 * k, 120 + 4 * k))
        names.append(f"m{k}.jpg")
    spec = tmp / "spec.json"
    spec.write_text(json.dumps(SPEC))
    exe = Path(sys.executable).with_name("sglang-mm")
    print("peak RSS of `sglang-mm dataset` (Qwen2-VL, compact, small JPEGs, 2 threads):")
    sizes = (1_000, 3_000) if QUICK else (1_000, 10_000)
    for n in sizes:
        manifest = write_manifest(tmp, n, names)
        for flight in (8, 128):
            out = tmp / "rss"
            shutil.rmtree(out, ignore_errors=True)
            cmd = [
                str(exe),
                "dataset",
                str(manifest),
                "--spec",
                str(spec),
                "--out",
                str(out),
                "--threads",
                "2",
                "--rows-in-flight",
                str(flight),
                "--no-progress",
            ]
            t = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            dt = time.perf_counter() - t
            assert status == 0, f"{cmd} failed"
            print(
                f"  {n:6d} rows, rows-in-flight {flight:4d}: {usage.ru_maxrss / 1024:7.1f} MB peak "
                f"({n / dt:.0f} samples/s)"
            )


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        which: Any = [a for a in sys.argv[1:] if not a.startswith("--")] or [
            "throughput",
            "count",
            "rss",
        ]
        if "throughput" in which:
            throughput(tmp)
        if "count" in which:
            count_only(tmp)
        if "rss" in which:
            peak_rss(tmp)


if __name__ == "__main__":
    main()
