"""The ``sglang-mm serve`` subcommand, kept here so the main CLI only wires it in. Importing
this module needs none of the server's dependencies; running the command does."""

from __future__ import annotations

import argparse
import logging

from ..errors import SpecError
from .config import (
    DEFAULT_DEADLINE_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_KEEP_ALIVE_S,
    DEFAULT_MAX_INPUT_IDS,
    DEFAULT_MAX_JSON_BYTES,
    DEFAULT_QUEUE_SIZE,
    DEFAULT_SHUTDOWN_S,
)


def _serve(args: argparse.Namespace) -> int:
    try:
        from .standalone import serve
    except ImportError as e:
        raise SpecError(
            f"`sglang-mm serve` needs the server extra: pip install 'sglang-mm-core[server]' ({e})"
        ) from None
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return serve(
        args.spec,
        host=args.host,
        port=args.port,
        workers=args.workers,
        pin_cores=args.pin_cores,
        queue_size=args.queue_size,
        deadline_s=args.deadline_s,
        log_level=args.log_level,
        max_json_bytes=args.max_json_bytes,
        max_input_ids=args.max_input_ids,
        header_timeout_s=args.header_timeout_s,
        keep_alive_s=args.keep_alive_s,
        shutdown_s=args.shutdown_s,
    )


def add_serve_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "serve",
        help="run the preprocessing HTTP server",
        description="Serve POST /v1/preprocess, /v1/tokens, GET /v1/families, /health, "
        "/metrics and /openapi.json for one spec.",
    )
    p.add_argument("--spec", required=True, metavar="S", help="spec JSON file (or JSON text)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (8000; 0 = any)")
    p.add_argument(
        "--workers", type=int, default=None, help="worker threads (default: min(4, cores))"
    )
    p.add_argument(
        "--pin-cores",
        action="store_true",
        help="keep the lowest min(2, n/4) cores for the ingress, pin workers to the rest",
    )
    p.add_argument(
        "--queue-size",
        type=int,
        default=DEFAULT_QUEUE_SIZE,
        help=f"requests waiting for a worker before 503 ({DEFAULT_QUEUE_SIZE})",
    )
    p.add_argument(
        "--deadline-s",
        type=float,
        default=DEFAULT_DEADLINE_S,
        help=f"per-request deadline in seconds ({DEFAULT_DEADLINE_S:g})",
    )
    p.add_argument(
        "--max-json-bytes",
        type=int,
        default=DEFAULT_MAX_JSON_BYTES,
        help=f"largest ?format=json answer, else 413 ({DEFAULT_MAX_JSON_BYTES})",
    )
    p.add_argument(
        "--max-input-ids",
        type=int,
        default=DEFAULT_MAX_INPUT_IDS,
        help=f"most token ids in one request, else 413 ({DEFAULT_MAX_INPUT_IDS})",
    )
    p.add_argument(
        "--header-timeout-s",
        type=float,
        default=DEFAULT_HEADER_TIMEOUT_S,
        help=f"time for a request's line and headers ({DEFAULT_HEADER_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--keep-alive-s",
        type=float,
        default=DEFAULT_KEEP_ALIVE_S,
        help=f"idle keep-alive connections are closed after it ({DEFAULT_KEEP_ALIVE_S:g})",
    )
    p.add_argument(
        "--shutdown-s",
        type=float,
        default=DEFAULT_SHUTDOWN_S,
        help=f"bound of a graceful stop ({DEFAULT_SHUTDOWN_S:g})",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="log level (info)",
    )
    p.set_defaults(func=_serve)


__all__ = ["add_serve_command"]
