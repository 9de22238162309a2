"""Fixtures of the dataset tests: the corpus (built once per session) and a real local Ray
cluster with 2 CPUs, started on first use and shut down at the end of the session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ds_helpers import LAYOUT, Corpus, build_corpus

from sglang_mm_core.dataset import Options, Summary, run


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_corpus(tmp_path_factory.mktemp("dataset_corpus"))


@pytest.fixture(scope="session")
def local_qwen_run(
    corpus: Corpus, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Summary]:
    """The JSONL manifest through the local engine with 2 threads (the reference output)."""
    out = tmp_path_factory.mktemp("local_qwen")
    return out, run(corpus.jsonl, corpus.qwen_spec, out, Options(threads=2, **LAYOUT))


@pytest.fixture(scope="session")
def local_qwen(local_qwen_run: tuple[Path, Summary]) -> Path:
    return local_qwen_run[0]


@pytest.fixture(scope="session")
def local_inkling(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local_inkling")
    run(corpus.parquet, corpus.inkling_spec, out, Options(threads=2, **LAYOUT))
    return out


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A real local Ray cluster (2 CPUs, no dashboard, a small object store), for the
    session; the dataset job sees it initialised and joins it."""
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=300 * 1024 * 1024,
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        yield ray
    finally:
        ray.shutdown()
