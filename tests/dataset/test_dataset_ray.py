"""The Ray engine and the `RayPreprocessor` recipe on a real local Ray cluster (2 CPUs):
the shards are the local engine's bytes, and the recipe's rows are the local rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ds_helpers import LAYOUT, Corpus, shard_bytes

from sglang_mm_core.dataset import Options, RayPreprocessor, run

# A local Ray cluster, load or fuzzing: `make test` runs it, `make check` does not.
pytestmark = pytest.mark.slow


def test_ray_engine_jsonl_same_shards_as_local(
    ray_cluster: Any, corpus: Corpus, local_qwen: Path, tmp_path: Path
) -> None:
    summary = run(corpus.jsonl, corpus.qwen_spec, tmp_path, Options(engine="ray", **LAYOUT))
    assert summary.rows == corpus.n_rows
    assert shard_bytes(tmp_path) == shard_bytes(local_qwen)


def test_ray_engine_parquet_resume_same_shards(
    ray_cluster: Any, corpus: Corpus, local_inkling: Path, tmp_path: Path
) -> None:
    # two finished shards copied from the local run: the Ray rerun skips their rows and
    # writes the rest, the local bytes again
    import shutil

    for name in ("part-00000.parquet", "part-00002.parquet", "_job.json"):
        shutil.copy(local_inkling / name, tmp_path / name)
    done = (local_inkling / "_done.json").read_text()
    import json

    doc = json.loads(done)
    doc["shards"] = {k: v for k, v in doc["shards"].items() if k in ("00000", "00002")}
    (tmp_path / "_done.json").write_text(json.dumps(doc))
    summary = run(corpus.parquet, corpus.inkling_spec, tmp_path, Options(engine="ray", **LAYOUT))
    assert summary.shards_skipped == 2
    assert summary.rows_this_run == corpus.n_rows - 2 * LAYOUT["shard_rows"]
    assert shard_bytes(tmp_path) == shard_bytes(local_inkling)


def test_recipe_map_batches(ray_cluster: Any, corpus: Corpus, local_inkling: Path) -> None:
    """The documented recipe on a user's own Ray Dataset: the rows are the local rows."""
    import pyarrow.parquet as pq
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ds = ray.data.read_parquet(str(corpus.parquet))
    out = ds.map_batches(
        RayPreprocessor,
        fn_constructor_kwargs={"spec": corpus.inkling_spec},
        concurrency=1,  # of the 2 CPUs, one is left to the read tasks
        num_cpus=1,
        batch_size=16,
        batch_format="pyarrow",
    )
    got = out.take_all()
    want = pq.read_table(sorted(local_inkling.glob("part-*.parquet"))).to_pylist()
    assert len(got) == len(want) == corpus.n_rows
    for g, w in zip(got, want, strict=True):
        w.pop("index")
        assert _plain(g) == _plain(w)


def _plain(value: Any) -> Any:
    """A row as Ray hands it back (numpy arrays for lists) in plain Python."""
    if hasattr(value, "tolist") and not isinstance(value, (bytes, str)):
        value = value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
