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

from ._carriers import MmInput, MmOutput, TokenCount
from .errors import MmError, MmRequestError, PluginError, SpecError

if TYPE_CHECKING:
    from ._driver import Pipeline

PROG = "sglang-mm"
BATCH = 8  # requests per process_batch call when a request file holds many


def _families(args: argparse.Namespace) -> int:
    """The usable families, then the plugins that failed to load (exit status 1 if any)."""
    from ._registry import default_registry

    reg = default_registry()
    broken = reg.broken(probe=True)  # first: a family that cannot be built is not listed
    fams = reg.families()
    if not fams and not broken:
        print("no families installed (plugins register under the entry point group sglang_mm)")
        return 0
    rows = [("family", "distribution", "version", "plugin")]
    rows += [(i.name, i.distribution, i.version, i.plugin) for _, i in sorted(fams.items())]
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    if broken:
        print(f"\nbroken: {len(broken)} plugin(s) failed to load; only specs naming them fail")
        for b in broken:
            what = ", ".join(b.families) or b.plugin
            print(f"{what}  {type(b.error).__name__}: {b.error}")  # the error names the dist
        return 1
    return 0


def _schema(args: argparse.Namespace) -> int:
    from ._registry import default_registry
    from ._spec import spec_json_schema

    reg = default_registry()
    fam = reg.get(args.family)
    if fam is None:
        installed = ", ".join(sorted(reg.families())) or "none"
        raise SpecError(f"unknown family {args.family!r}; installed families: {installed}")
    print(json.dumps(spec_json_schema(fam), indent=2))
    return 0


OUT_SUFFIXES = (".safetensors", ".npz")


def check_out_path(path: str) -> Path:
    """Refuse an ``--out`` the run could not write, before any work: its suffix, its folder
    (existing, a folder, writable) and, for ``.safetensors``, the package that writes it."""
    out = Path(path)
    if out.suffix not in OUT_SUFFIXES:
        raise MmRequestError(f"--out must end in .safetensors or .npz, got {path!r}")
    folder = out.parent
    if not folder.exists():
        raise MmRequestError(f"--out {path!r}: folder {str(folder)!r} does not exist")
    if not folder.is_dir():
        raise MmRequestError(f"--out {path!r}: {str(folder)!r} is not a folder")
    if out.is_dir():
        raise MmRequestError(f"--out {path!r} is a folder, not a file")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise MmRequestError(f"--out {path!r}: folder {str(folder)!r} is not writable")
    if out.suffix == ".safetensors":
        try:
            import safetensors.numpy  # noqa: F401
        except ImportError:
            raise MmRequestError(
                "--out .safetensors needs the safetensors package: pip install safetensors "
                "(the 'safetensors' extra of sglang-mm-core), or write .npz"
            ) from None
    return out


def _save(out: MmOutput, path: Path) -> None:
    """Write one output; any failure of the writer (disk full, folder gone) is one error."""
    from ._requests_io import save_output

    try:
        save_output(out, path)
    except MmError:
        raise
    except Exception as e:  # OSError, or the safetensors writer's own error type
        raise MmRequestError(f"cannot write {str(path)!r}: {type(e).__name__}: {e}") from e


def _describe_error(e: MmError) -> str:
    return f"error: {type(e).__name__}: {e}"


def _run(args: argparse.Namespace) -> int:
    from ._driver import pipeline_from_spec
    from ._requests_io import describe, read_requests_each

    out_path = check_out_path(args.out) if args.out else None
    with pipeline_from_spec(args.spec) as pipe:
        requests = read_requests_each(args.request)
        if len(requests) == 1:
            req = requests[0]
            if isinstance(req, MmError):
                raise req
            out = pipe.process(req)
            for line in describe(out, len(req.input_ids)):
                print(line)
            if out_path is not None:
                _save(out, out_path)
                print(f"wrote {out_path}")
            return 0
        return _run_many(pipe, requests, out_path)


def _name(req: MmInput | MmError, index: int) -> str:
    rid = req.rid if isinstance(req, MmInput) else None
    return rid or f"#{index}"


def _run_many(pipe: Pipeline, requests: Sequence[MmInput | MmError], out_base: Path | None) -> int:
    """Many requests: one line each under a progress bar; failures do not stop the rest."""
    from tqdm import tqdm

    from ._requests_io import numbered

    failed = 0
    with tqdm(total=len(requests), unit="req", file=sys.stderr, disable=None) as bar:
        for start in range(0, len(requests), BATCH):
            chunk = requests[start : start + BATCH]
            good = [r for r in chunk if isinstance(r, MmInput)]
            done = iter(pipe.process_batch(good, return_exceptions=True))
            for k, req in enumerate(chunk):
                i = start + k
                res = next(done) if isinstance(req, MmInput) else req
                name = _name(req, i)
                if isinstance(res, MmOutput) and out_base is not None:
                    try:
                        _save(res, numbered(out_base, i))
                    except MmError as e:
                        res = e
                if isinstance(res, MmOutput):
                    shapes = " ".join(str(list(it.feature.shape)) for it in res.items)
                    tqdm.write(
                        f"{name}: {len(res.input_ids)} tokens, {len(res.items)} image(s) "
                        f"{shapes}".rstrip()
                    )
                else:
                    failed += 1
                    tqdm.write(f"{name}: {_describe_error(res)}")
            bar.update(len(chunk))
    print(f"{len(requests) - failed} of {len(requests)} request(s) succeeded")
    return 1 if failed else 0


def _count(pipe: Pipeline, req: MmInput | MmError) -> TokenCount:
    """`Pipeline.count_tokens` (which applies the family's prompt checks, as `run` does), or
    the request's own parse error."""
    if isinstance(req, MmError):
        raise req
    return pipe.count_tokens(req)


def _tokens(args: argparse.Namespace) -> int:
    """One count per request; on a many-request file each bad request gets its error line
    and the others their counts (exit status 1 if any failed), as `run` does."""
    from ._driver import pipeline_from_spec
    from ._requests_io import read_requests_each

    with pipeline_from_spec(args.spec) as pipe:
        requests = read_requests_each(args.request)
        if len(requests) == 1:
            count = _count(pipe, requests[0])
            print(f"{count.length} tokens; per image {count.per_item}")
            return 0
        failed = 0
        for i, req in enumerate(requests):
            name = _name(req, i)
            try:
                count = _count(pipe, req)
            except MmError as e:
                failed += 1
                print(f"{name}: {_describe_error(e)}")
                continue
            print(f"{name}: {count.length} tokens; per image {count.per_item}")
        print(f"{len(requests) - failed} of {len(requests)} request(s) counted")
        return 1 if failed else 0


def _spec_from_hf(args: argparse.Namespace) -> int:
    """Ask the families (or the ones named) for a spec of a HuggingFace model directory;
    exactly one must accept it."""
    from ._hf import ModelDir
    from ._registry import default_registry

    root = Path(args.path)
    model = ModelDir.load(root)  # parsed once, file by file, for every family that asks
    reg = default_registry()
    accepted: list[tuple[str, dict[str, Any]]] = []
    refused: list[str] = []
    for name in list(args.family) or sorted(reg.families()):
        try:
            fam = reg.get(name)
        except PluginError as e:
            if args.family:
                raise
            refused.append(f"{name}: {e}")
            continue
        if fam is None:
            installed = ", ".join(sorted(reg.families())) or "none"
            raise SpecError(f"unknown family {name!r}; installed families: {installed}")
        try:
            accepted.append((name, fam.spec_from_hf(model)))
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
            "the conformance suite needs pytest and jsonschema: pip install pytest jsonschema "
            "(the 'conformance' extra of sglang-mm-core)"
        ) from None
    from . import conformance
    from ._registry import default_registry

    # fail early, in one line, on unknown names or nothing to check
    broken = [] if args.family else default_registry().broken(probe=True)
    for b in broken:  # its checks cannot run: the run fails, after checking the others
        print(f"{PROG}: error: {type(b.error).__name__}: {b.error}", file=sys.stderr)
    if not conformance.installed_targets(args.family):
        if broken:
            return 1
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
    code = int(pytest.main(argv))
    return code or (1 if broken else 0)


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

    from .dataset.cli import add_dataset_command
    from .server.cli import add_serve_command

    add_serve_command(sub)
    add_dataset_command(sub)
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
        print(f"{PROG}: error: {type(e).__name__}: {e}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
