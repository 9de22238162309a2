"""The ``sglang-mm dataset`` subcommand (the main CLI only wires it in). Importing this needs
none of the dataset extras; running the command does, and names the missing one."""

from __future__ import annotations

import argparse

from ._job import (
    DEFAULT_COUNT_ROW_GROUP_ROWS,
    DEFAULT_ROW_GROUP_ROWS,
    DEFAULT_ROWS_IN_FLIGHT,
    DEFAULT_SHARD_ROWS,
)
from ._process import DEFAULT_IO_THREADS


def _dataset(args: argparse.Namespace) -> int:
    from ._job import Options, run

    opts = Options(
        count_only=args.count_only,
        features=args.features,
        engine=args.engine,
        address=args.address,
        threads=args.threads,
        io_threads=args.io_threads,
        shard_rows=args.shard_rows,
        row_group_rows=args.row_group_rows,
        rows_in_flight=args.rows_in_flight,
        progress=False if args.no_progress else None,
    )
    summary = run(args.manifest, args.spec, args.out, opts)
    for line in summary.lines():
        print(line)
    return 0


def add_dataset_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "dataset",
        help="preprocess a manifest of samples into Parquet shards",
        description="Preprocess every row of MANIFEST (JSONL or Parquet: id, input_ids, "
        "images) into Parquet shards in --out. A bad sample gets its error in its row; a "
        "rerun into the same folder skips the finished shards.",
    )
    p.add_argument("manifest", metavar="MANIFEST", help="manifest file (.jsonl or .parquet)")
    p.add_argument("--spec", required=True, metavar="S", help="spec JSON file (or JSON text)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder of the shards")
    p.add_argument(
        "--count-only",
        action="store_true",
        help="only token counts, per sample and per image, from image headers (no decode)",
    )
    p.add_argument(
        "--features",
        choices=("compact", "full"),
        default=None,
        help="feature form (default: compact where the family offers it)",
    )
    p.add_argument("--engine", choices=("local", "ray"), default="local", help="(local)")
    p.add_argument("--address", default=None, help="Ray cluster to join (default: start one)")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="local: the pipeline's pool (default: the spec's rule); ray: CPUs to use",
    )
    p.add_argument(
        "--io-threads", type=int, default=DEFAULT_IO_THREADS, help="fetch threads (%(default)s)"
    )
    p.add_argument(
        "--shard-rows", type=int, default=DEFAULT_SHARD_ROWS, help="rows per shard (%(default)s)"
    )
    p.add_argument(
        "--row-group-rows",
        type=int,
        default=None,
        help=f"rows per Parquet row group ({DEFAULT_ROW_GROUP_ROWS}; "
        f"{DEFAULT_COUNT_ROW_GROUP_ROWS} with --count-only)",
    )
    p.add_argument(
        "--rows-in-flight",
        type=int,
        default=DEFAULT_ROWS_IN_FLIGHT,
        help="most rows fetched or processed ahead of the writer: bounds memory (%(default)s)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_dataset)
