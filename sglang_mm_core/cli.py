"""The ``sglang-mm`` command: list families, print a spec's JSON Schema, run or count a request,
and run the conformance suite. Every error is one line on stderr and a non-zero exit."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._carriers import MmInput, MmOutput
from .errors import MmError, SpecError

if TYPE_CHECKING:
    from .driver import Pipeline

PROG = "sglang-mm"
BATCH = 8  # requests per process_batch call when a request file holds many


def _families(args: argparse.Namespace) -> int:
    from .registry import default_registry

    fams = default_registry().families()
    if not fams:
        print("no families installed (plugins register under the entry point group sglang_mm)")
        return 0
    rows = [("family", "distribution", "version", "plugin")]
    rows += [(i.name, i.distribution, i.version, i.plugin) for _, i in sorted(fams.items())]
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return 0


def _schema(args: argparse.Namespace) -> int:
    from .registry import default_registry
    from .spec import spec_json_schema

    reg = default_registry()
    fam = reg.get(args.family)
    if fam is None:
        installed = ", ".join(sorted(reg.families())) or "none"
        raise SpecError(f"unknown family {args.family!r}; installed families: {installed}")
    print(json.dumps(spec_json_schema(fam), indent=2))
    return 0


def _run(args: argparse.Namespace) -> int:
    from .driver import pipeline_from_spec
    from .requests_io import describe, read_requests, save_output

    with pipeline_from_spec(args.spec) as pipe:
        requests = read_requests(args.request)
        if len(requests) == 1:
            out = pipe.process(requests[0])
            for line in describe(out, len(requests[0].input_ids)):
                print(line)
            if args.out:
                save_output(out, args.out)
                print(f"wrote {args.out}")
            return 0
        return _run_many(pipe, requests, args.out)


def _run_many(pipe: Pipeline, requests: list[MmInput], out_path: str | None) -> int:
    """Many requests: one line each under a progress bar; failures do not stop the rest."""
    from tqdm import tqdm

    from .requests_io import numbered, save_output

    failed = 0
    out_base = Path(out_path) if out_path else None
    with tqdm(total=len(requests), unit="req", file=sys.stderr, disable=None) as bar:
        for start in range(0, len(requests), BATCH):
            chunk: list[MmInput] = requests[start : start + BATCH]
            for k, res in enumerate(pipe.process_batch(chunk, return_exceptions=True)):
                i = start + k
                name = chunk[k].rid or f"#{i}"
                if isinstance(res, MmOutput):
                    shapes = " ".join(str(list(it.feature.shape)) for it in res.items)
                    tqdm.write(
                        f"{name}: {len(res.input_ids)} tokens, {len(res.items)} image(s) "
                        f"{shapes}".rstrip()
                    )
                    if out_base is not None:
                        save_output(res, numbered(out_base, i))
                else:
                    failed += 1
                    tqdm.write(f"{name}: error: {res}")
            bar.update(len(chunk))
    print(f"{len(requests) - failed} of {len(requests)} request(s) succeeded")
    return 1 if failed else 0


def _tokens(args: argparse.Namespace) -> int:
    from .driver import pipeline_from_spec
    from .requests_io import read_requests

    with pipeline_from_spec(args.spec) as pipe:
        requests = read_requests(args.request)
        for i, req in enumerate(requests):
            count = pipe.count_tokens(req)
            name = req.rid or f"#{i}"
            prefix = f"{name}: " if len(requests) > 1 else ""
            print(f"{prefix}{count.length} tokens; per image {count.per_item}")
    return 0


def _read_config(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path.name} not found in {path.parent}") from None
    except (OSError, ValueError) as e:
        raise SpecError(f"cannot read {path}: {e}") from None
    if not isinstance(doc, dict):
        raise SpecError(f"{path} must hold a JSON object")
    return doc


def _spec_from_hf(args: argparse.Namespace) -> int:
    """Ask the families (or the ones named) for a spec of a HuggingFace model directory;
    exactly one must accept it."""
    from .registry import default_registry

    root = Path(args.path)
    if not root.is_dir():
        raise SpecError(f"{root} is not a model directory")
    pp = _read_config(root / "preprocessor_config.json")
    config = _read_config(root / "config.json")
    reg = default_registry()
    accepted: list[tuple[str, dict[str, Any]]] = []
    refused: list[str] = []
    for name in list(args.family) or sorted(reg.families()):
        fam = reg.get(name)
        if fam is None:
            installed = ", ".join(sorted(reg.families())) or "none"
            raise SpecError(f"unknown family {name!r}; installed families: {installed}")
        try:
            accepted.append((name, fam.spec_from_hf(pp, config)))
        except NotImplementedError:
            refused.append(f"{name}: no spec_from_hf")
        except SpecError as e:
            refused.append(f"{name}: {e}")
    if not accepted:
        raise SpecError(f"no family can build a spec for {root}: " + "; ".join(refused))
    if len(accepted) > 1:
        names = ", ".join(n for n, _ in accepted)
        raise SpecError(f"several families accept {root} ({names}): pick one with --family")
    print(json.dumps(accepted[0][1], indent=2))
    return 0


def _conformance(args: argparse.Namespace) -> int:
    try:
        import pytest
    except ImportError:
        raise SpecError(
            "the conformance suite needs pytest: pip install 'sglang-mm-core[conformance]'"
        ) from None
    from . import conformance

    # fail early, in one line, on unknown names or nothing to check
    if not conformance.installed_targets(args.family):
        raise SpecError("no families installed: nothing to check")
    # The suite parametrizes at import, so it must not be imported before the variable is set.
    os.environ["SGLANG_MM_CONFORMANCE_FAMILIES"] = ",".join(args.family)
    suite = Path(conformance.__file__ or "").with_name("suite.py")
    argv = [
        str(suite),
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(suite.parent),
        # this package is already imported (the CLI runs in it): nothing to rewrite
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        *args.pytest_args,
    ]
    return int(pytest.main(argv))


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=PROG, description="Bit-exact multimodal preprocessing for LLM serving."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("families", help="list installed families")
    p.set_defaults(func=_families)

    p = sub.add_parser("schema", help="print the JSON Schema of a spec for FAMILY")
    p.add_argument("family", metavar="FAMILY")
    p.set_defaults(func=_schema)

    for name, func, text in [
        ("run", _run, "process a request file and summarise the output"),
        ("tokens", _tokens, "count a request's tokens from image headers (no decode)"),
    ]:
        p = sub.add_parser(name, help=text)
        p.add_argument("--spec", required=True, metavar="S", help="spec JSON file (or JSON text)")
        p.add_argument("--request", required=True, metavar="R", help="request JSON (or JSONL) file")
        if name == "run":
            p.add_argument(
                "--out", metavar="FILE", help="write tensors to FILE.safetensors or FILE.npz"
            )
        p.set_defaults(func=func)

    p = sub.add_parser("spec-from-hf", help="print a spec for a HuggingFace model directory")
    p.add_argument("path", metavar="PATH", help="directory with config.json and its processor")
    p.add_argument("--family", action="append", default=[], metavar="NAME", help="ask only NAME")
    p.set_defaults(func=_spec_from_hf)

    p = sub.add_parser(
        "conformance",
        help="run the plugin conformance suite (pytest)",
        description="Run the conformance checks on installed families; other options are "
        "passed on to pytest (e.g. -q, -x, -k EXPR).",
    )
    p.add_argument("--family", action="append", default=[], metavar="NAME", help="only this family")
    p.set_defaults(func=_conformance, pytest_args=[])

    from .server.cli import add_serve_command

    add_serve_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "conformance":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.pytest_args = extra
    try:
        return int(args.func(args))
    except MmError as e:
        print(f"{PROG}: error: {type(e).__name__}: {e}", file=sys.stderr)
    except BrokenPipeError:  # the reader went away (e.g. `| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
