"""Videos in dataset manifests: a JSONL manifest of relative video paths (one with its own
options) and a Parquet manifest of video bytes (a list<binary> column, and a struct column of
source and options, nulls for the options not given) give, row for row, what
`Pipeline.process` gives on the same sources (compact features expanded, every bit); the
count-only run agrees with `count_tokens` and with the full run; a bad video's row carries its
typed error naming the video."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from numpy.testing import assert_array_equal

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.conformance.video import make_clip
from sglang_mm_core.dataset import Manifest, Options, read_shards, run
from sglang_mm_core.errors import MmError

VS, VE, IMAGE, VIDEO = 151652, 151653, 151655, 151656
SPEC: dict[str, Any] = {
    "family": "qwen_vl",
    "params": {"generation": "qwen2_5_vl", "video_fps": 4.0},
    "limits": {"max_items": 4},
    "threads": None,
}
LAYOUT: dict[str, Any] = {"shard_rows": 3, "row_group_rows": 2, "progress": False}


def _prompt(*tokens: int) -> list[int]:
    out = [1]
    for t in tokens:
        out += [VS, t, VE, 2]
    return out


@pytest.fixture(scope="module")
def clips() -> dict[str, bytes]:
    return {
        "a": make_clip("libx264", 64, 48, 6, seed=5),
        "b": make_clip("mpeg4", 80, 56, 9, rate=12, seed=6),
        "bad": make_clip("libx264", 64, 48, 6, seed=7)[:300],
    }


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory: pytest.TempPathFactory, clips: dict[str, bytes]) -> Path:
    root = tmp_path_factory.mktemp("jsonl")
    (root / "clips").mkdir()
    for name, data in clips.items():
        (root / "clips" / f"{name}.mp4").write_bytes(data)
    rows = [
        {"id": "one", "input_ids": _prompt(VIDEO), "videos": ["clips/a.mp4"]},
        {"id": "single", "input_ids": _prompt(VIDEO), "video": "clips/b.mp4"},
        {
            "id": "two",
            "input_ids": _prompt(VIDEO, VIDEO),
            "videos": ["clips/b.mp4", {"video": "clips/a.mp4", "nframes": 2}],
        },
        {
            "id": "bad",
            "input_ids": _prompt(VIDEO, VIDEO),
            "videos": ["clips/a.mp4", "clips/bad.mp4"],
        },
        {"id": "short", "input_ids": _prompt(VIDEO, VIDEO), "videos": ["clips/a.mp4"]},
        {
            "id": "badopt",
            "input_ids": _prompt(VIDEO),
            "videos": [{"video": "clips/a.mp4", "fps": 0}],
        },
        {"id": "text", "input_ids": [5, 6, 7]},
    ]
    path = root / "manifest.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory, clips: dict[str, bytes]) -> Path:
    path = tmp_path_factory.mktemp("parquet") / "manifest.parquet"
    table = pa.table(
        {
            "id": ["p0", "p1", "p2"],
            "input_ids": [_prompt(VIDEO), _prompt(VIDEO, VIDEO), _prompt(VIDEO)],
            "videos": pa.array(
                [[clips["a"]], [clips["b"], clips["a"]], [clips["bad"]]], pa.list_(pa.binary())
            ),
        }
    )
    pq.write_table(table, path)
    return path


@pytest.fixture(scope="module")
def parquet_options(tmp_path_factory: pytest.TempPathFactory, clips: dict[str, bytes]) -> Path:
    """A struct column: the source beside options, nulls where an option is not given."""
    path = tmp_path_factory.mktemp("parquet_opts") / "manifest.parquet"
    element = pa.struct([("video", pa.binary()), ("fps", pa.float64()), ("nframes", pa.int64())])
    videos = pa.array(
        [
            [{"video": clips["a"], "fps": None, "nframes": 4}],
            [{"video": clips["b"], "fps": 2.0, "nframes": None}],
        ],
        pa.list_(element),
    )
    table = pa.table({"id": ["s0", "s1"], "input_ids": [_prompt(VIDEO)] * 2, "videos": videos})
    pq.write_table(table, path)
    return path


def _reference(sample: Any, *, count: bool) -> Any:
    with pipeline_from_spec(SPEC) as pipe:
        req = MmInput(sample.input_ids, sample.images, sample.id, sample.videos)
        try:
            return pipe.count_tokens(req) if count else pipe.process(req)
        except MmError as e:
            return e


def _check_full(manifest: Path, out: Path) -> list[str]:
    run(manifest, SPEC, out, Options(**LAYOUT))
    rows = read_shards(out)
    samples = list(Manifest(manifest).samples())
    assert len(rows) == len(samples)
    seen = []
    for row, sample in zip(rows, samples, strict=True):
        want = sample.error if sample.error is not None else _reference(sample, count=False)
        if isinstance(want, MmError):
            assert row.error is not None, row.id
            got = (row.error.type, row.error.message, row.error.item, row.error.modality)
            modality = None if want.item is None else want.modality
            assert got == (type(want).__name__, want.message, want.item, modality)
            seen.append(f"{row.id}: {row.error.type}")
            continue
        assert row.error is None, row.error
        out_ = row.output
        assert out_ is not None
        assert_array_equal(out_.input_ids, want.input_ids)
        assert out_.offsets == want.offsets and out_.hashes == want.hashes
        assert row.modalities == [it.modality for it in want.items]
        assert_array_equal(out_.positions.positions, want.positions.positions)
        assert out_.positions.delta == want.positions.delta
        for a, b in zip(out_.items, want.items, strict=True):
            assert a.modality == b.modality == "video"
            assert a.geometry == b.geometry and a.tokens == b.tokens
            full = a.feature.expand()  # compact by default
            assert full.dtype == b.feature.dtype
            assert_array_equal(full.array, b.feature.array)
            assert sorted(a.aux) == sorted(b.aux) == ["second_per_grid_ts", "video_grid_thw"]
            for k in a.aux:
                assert a.aux[k].dtype == b.aux[k].dtype
                assert_array_equal(a.aux[k].array, b.aux[k].array)
        seen.append(f"{row.id}: ok")
    return seen


def test_jsonl_videos_match_process(jsonl: Path, tmp_path: Path) -> None:
    seen = _check_full(jsonl, tmp_path / "out")
    assert seen == [
        "one: ok",
        "single: ok",
        "two: ok",
        "bad: DecodeError",
        "short: LayoutError",
        "badopt: MmRequestError",
        "text: ok",
    ]
    bad = read_shards(tmp_path / "out")[3].error
    assert bad is not None and (bad.item, bad.modality) == (1, "video")
    assert bad.message.startswith("video 1 (file)"), bad.message  # the source as given


def test_parquet_video_bytes_match_process(parquet: Path, tmp_path: Path) -> None:
    assert _check_full(parquet, tmp_path / "out") == ["p0: ok", "p1: ok", "p2: DecodeError"]


def test_parquet_video_options_match_process(parquet_options: Path, tmp_path: Path) -> None:
    assert _check_full(parquet_options, tmp_path / "out") == ["s0: ok", "s1: ok"]
    rows = read_shards(tmp_path / "out")
    grid = rows[0].output.items[0].aux["video_grid_thw"].array  # type: ignore[union-attr]
    assert grid.tolist()[0][0] == 2  # nframes 4: two temporal steps


def test_count_only_agrees(jsonl: Path, tmp_path: Path) -> None:
    summary = run(jsonl, SPEC, tmp_path / "counts", Options(count_only=True, **LAYOUT))
    run(jsonl, SPEC, tmp_path / "full", Options(**LAYOUT))
    counts, full = read_shards(tmp_path / "counts"), read_shards(tmp_path / "full")
    samples = list(Manifest(jsonl).samples())
    for c, f, s in zip(counts, full, samples, strict=True):
        want = _reference(s, count=True)
        if isinstance(want, MmError):
            assert c.error is not None and c.error.type == type(want).__name__
            assert f.error is not None  # what count_tokens refuses, process refuses
            continue
        assert c.error is None
        assert (c.tokens, c.item_tokens, c.modalities) == (
            want.length,
            want.per_item,
            want.modalities,
        )
        assert (c.tokens, c.item_tokens, c.modalities) == (f.tokens, f.item_tokens, f.modalities)
    good = [c for c in counts if c.error is None]
    assert summary.videos == sum(len(c.modalities or []) for c in good) == 4
    assert summary.images == 0


def test_a_bad_videos_column_is_a_row_error(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    rows = [{"id": "x", "input_ids": _prompt(VIDEO), "videos": "not-a-list.mp4"}]
    rows.append({"id": "y", "input_ids": _prompt(VIDEO), "videos": [{"video": 12}]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run(path, SPEC, tmp_path / "out", Options(**LAYOUT))
    got = [(r.error.type, r.error.message) for r in read_shards(tmp_path / "out") if r.error]
    assert got == [
        ("ManifestError", "manifest row: videos must be a list of sources"),
        (
            "ManifestError",
            "manifest row, video 0: a video source must be a path, URL, base64 string or "
            "bytes, got int",
        ),
    ]
    assert np.all([r.output is None for r in read_shards(tmp_path / "out")])
