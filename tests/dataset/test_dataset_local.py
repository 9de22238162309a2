"""The local engine on the corpus: every good row is `Pipeline.process`'s output bit for bit
(the compact form expanded), every bad row carries the error `Pipeline.process` raises, the
shards are the same bytes whatever the parallelism, and `--count-only` agrees with
`count_tokens` and with the full run's counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ds_helpers import LAYOUT, Corpus, manifest_samples, shard_bytes
from numpy.testing import assert_array_equal

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core._compact import CompactTensor
from sglang_mm_core.dataset import DatasetRow, Options, Summary, read_shards, run
from sglang_mm_core.errors import DatasetError, MmError
from sglang_mm_core.plugin import MRope


def assert_same_as_process(
    rows: list[DatasetRow], manifest: Path, spec: dict[str, Any]
) -> dict[str, int]:
    """Each row against `Pipeline.process` on the manifest's sources; the error classes seen."""
    samples = manifest_samples(manifest)
    assert [r.index for r in rows] == list(range(len(samples)))
    errors: dict[str, int] = {}
    with pipeline_from_spec(spec) as pipe:
        for row, s in zip(rows, samples, strict=True):
            assert row.id == s.id
            if s.error is not None:
                want: MmError | None = s.error
            else:
                try:
                    ref = pipe.process(MmInput(s.input_ids, s.images, s.id))
                    want = None
                except MmError as e:
                    want = e
            if want is not None:
                assert row.error is not None, f"row {row.index} should fail with {want!r}"
                assert (row.error.type, row.error.message, row.error.item) == (
                    type(want).__name__,
                    want.message,
                    want.item,
                )
                assert row.output is None and row.tokens is None
                errors[row.error.type] = errors.get(row.error.type, 0) + 1
                continue
            assert row.error is None, row.error
            out = row.output
            assert out is not None
            assert_array_equal(out.input_ids, ref.input_ids)
            assert out.input_ids.dtype == ref.input_ids.dtype
            assert out.offsets == ref.offsets
            assert out.hashes == ref.hashes
            assert row.tokens == len(ref.input_ids)
            assert row.item_tokens == [it.tokens for it in ref.items]
            if isinstance(ref.positions, MRope):
                assert isinstance(out.positions, MRope)
                assert_array_equal(out.positions.positions, ref.positions.positions)
                assert out.positions.delta == ref.positions.delta
            else:
                assert out.positions == ref.positions
            for a, b in zip(out.items, ref.items, strict=True):
                assert isinstance(a.feature, CompactTensor)  # the default form
                full = a.feature.expand()
                assert full.dtype == b.feature.dtype and full.shape == b.feature.shape
                assert_array_equal(full.array, b.feature.array)
                assert a.geometry == b.geometry and a.tokens == b.tokens
                assert sorted(a.aux) == sorted(b.aux)
                for k in a.aux:
                    assert a.aux[k].dtype == b.aux[k].dtype
                    assert_array_equal(a.aux[k].array, b.aux[k].array)
    return errors


def test_jsonl_paths_match_process(corpus: Corpus, local_qwen: Path) -> None:
    rows = read_shards(local_qwen)
    assert len(rows) == corpus.n_rows
    errors = assert_same_as_process(rows, corpus.jsonl, corpus.qwen_spec)
    # every kind of bad row was there and was caught as its class
    assert set(errors) == {"FetchError", "LimitError", "LayoutError", "ManifestError"}
    assert sum(errors.values()) == sum(corpus.bad_kinds.values()) + corpus.bad_kinds["row"]
    assert len(shard_bytes(local_qwen)) == -(-corpus.n_rows // LAYOUT["shard_rows"])


def test_parquet_bytes_match_process(corpus: Corpus, local_inkling: Path) -> None:
    rows = read_shards(local_inkling)
    errors = assert_same_as_process(rows, corpus.parquet, corpus.inkling_spec)
    assert set(errors) == {"DecodeError", "LimitError", "LayoutError", "ManifestError"}


def test_full_features_on_request(corpus: Corpus, local_qwen: Path, tmp_path: Path) -> None:
    run(corpus.jsonl, corpus.qwen_spec, tmp_path, Options(features="full", threads=2, **LAYOUT))
    full, compact = read_shards(tmp_path), read_shards(local_qwen)
    n_items = 0
    for a, b in zip(full, compact, strict=True):
        assert (a.error, a.tokens) == (b.error, b.tokens)
        if a.output is None:
            continue
        assert b.output is not None
        for x, y in zip(a.output.items, b.output.items, strict=True):
            assert not isinstance(x.feature, CompactTensor)
            assert isinstance(y.feature, CompactTensor)
            assert_array_equal(x.feature.array, y.feature.expand().array)
            n_items += 1
    assert n_items > 100


@pytest.mark.parametrize(
    "opts",
    [
        {"threads": 0, "rows_in_flight": 1, "io_threads": 1},
        {"threads": 2, "rows_in_flight": 7, "io_threads": 3},
    ],
    ids=["inline", "threads2"],
)
def test_same_bytes_whatever_the_parallelism(
    corpus: Corpus, local_qwen: Path, tmp_path: Path, opts: dict[str, Any]
) -> None:
    run(corpus.jsonl, corpus.qwen_spec, tmp_path, Options(**opts, **LAYOUT))
    assert shard_bytes(tmp_path) == shard_bytes(local_qwen)


def test_rerun_skips_finished_shards(corpus: Corpus, local_qwen: Path, tmp_path: Path) -> None:
    import shutil

    for p in local_qwen.iterdir():
        shutil.copy(p, tmp_path / p.name)
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("part-*")}
    summary = run(corpus.jsonl, corpus.qwen_spec, tmp_path, Options(**LAYOUT))
    assert summary.shards_skipped == summary.shards and summary.bytes_written == 0
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("part-*")} == before
    assert summary.rows == corpus.n_rows
    # another job into the same folder is refused, naming what differs
    with pytest.raises(DatasetError, match="shard_rows"):
        run(corpus.jsonl, corpus.qwen_spec, tmp_path, Options(shard_rows=10, progress=False))


@pytest.mark.parametrize("which", ["jsonl", "parquet"])
def test_count_only(
    corpus: Corpus, local_qwen: Path, local_inkling: Path, tmp_path: Path, which: str
) -> None:
    manifest, spec, full_dir = (
        (corpus.jsonl, corpus.qwen_spec, local_qwen)
        if which == "jsonl"
        else (corpus.parquet, corpus.inkling_spec, local_inkling)
    )
    summary = run(manifest, spec, tmp_path, Options(count_only=True, **LAYOUT))
    counts = read_shards(tmp_path)
    full = read_shards(full_dir)
    samples = manifest_samples(manifest)
    good = 0
    with pipeline_from_spec(spec) as pipe:
        for c, f, s in zip(counts, full, samples, strict=True):
            assert c.output is None and c.id == s.id
            try:
                if s.error is not None:
                    raise s.error
                ref = pipe.count_tokens(MmInput(s.input_ids, s.images, s.id))
            except MmError as e:
                assert c.error is not None
                assert (c.error.type, c.error.message) == (type(e).__name__, e.message)
                assert f.error is not None  # what count_tokens refuses, process refuses
                continue
            assert c.error is None
            assert (c.tokens, c.item_tokens) == (ref.length, ref.per_item)
            # the header-only counts are the full pipeline's
            assert (c.tokens, c.item_tokens) == (f.tokens, f.item_tokens)
            good += 1
    assert good > 150
    assert summary.tokens == sum(c.tokens or 0 for c in counts)
    assert summary.errors and sum(summary.errors.values()) == sum(
        c.error is not None for c in counts
    )


def test_summary_totals(corpus: Corpus, local_qwen_run: tuple[Path, Summary]) -> None:
    folder, summary = local_qwen_run
    rows = read_shards(folder)
    assert summary.rows == len(rows) == corpus.n_rows
    assert summary.tokens == sum(r.tokens or 0 for r in rows)
    assert summary.images == sum(len(r.item_tokens or []) for r in rows if r.error is None)
    assert summary.errors == {
        t: sum(1 for r in rows if r.error is not None and r.error.type == t)
        for t in {r.error.type for r in rows if r.error is not None}
    }
    assert (
        summary.bytes
        == summary.bytes_written
        == sum(p.stat().st_size for p in folder.glob("part-*.parquet"))
    )
    text = "\n".join(summary.lines())
    assert "LayoutError" in text and str(summary.tokens) in text
    assert np.all(np.diff([r.index for r in rows]) == 1)


def test_public_dataset_layout(corpus: Corpus, tmp_path: Path) -> None:
    """An ``image`` struct column of ``{bytes, path}`` (bytes when set, else the path relative
    to the manifest), and ``rid`` for the id, as request files name it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = corpus.jsonl.parent
    names = sorted(p.name for p in (folder / "images").glob("*.jpeg"))[:6]
    data = [(folder / "images" / n).read_bytes() for n in names]
    image = [
        {"bytes": d if k % 2 else None, "path": f"images/{n}"}
        for k, (n, d) in enumerate(zip(names, data, strict=True))
    ]
    ids = [[151644, 872, 198, 151652, 151655, 151653, 30, 151645]] * len(names)
    manifest = folder / "public.parquet"
    pq.write_table(pa.table({"rid": names, "input_ids": ids, "image": image}), manifest)
    run(manifest, corpus.qwen_spec, tmp_path, Options(**LAYOUT))
    rows = read_shards(tmp_path)
    assert [r.id for r in rows] == names
    assert_same_as_process(rows, manifest, corpus.qwen_spec)
    assert all(r.error is None for r in rows)
    with pipeline_from_spec(corpus.qwen_spec) as pipe:  # bytes and path give the same bits
        for row, d in zip(rows, data, strict=True):
            assert row.output is not None
            ref = pipe.process(MmInput(ids[0], [d]))
            assert row.output.hashes == ref.hashes
