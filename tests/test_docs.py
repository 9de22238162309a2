"""The documentation's examples run: every ```python block of README.md, CONTRIBUTING.md and
docs/*.md, each document's blocks in order in one fresh interpreter (the development venv's
Python, from the repository root, so ``examples/...`` paths resolve), each block in a fresh
namespace, so that a block is a complete example on its own (its imports included). A failure
names the document, the block and its first line. Fragments that cannot run (a
``pyproject.toml``, Rust, a shell session) carry their own fence language.

The ``sglang-mm`` commands of the README's shell blocks run as well (the quick ones: the
listing, the schema, a run and a token count on the bundled examples).

``docs/families/*.md`` are left out: they are the family owners' pages, whose Python blocks
illustrate the API on the reader's own inputs (``jpeg_bytes``, ``rgb_uint8_hwc``) rather than
run on the bundled examples."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")],
    key=lambda p: p.relative_to(ROOT).as_posix(),
)
#: Fence languages that would be Python under another name, and so escape these tests.
PYTHON_ALIASES = {"py", "python3", "pycon", "ipython", "pytest"}
#: The README's shell commands that run here: quick, offline, on the bundled examples.
QUICK_COMMANDS = {"families", "schema", "run", "tokens"}
TIMEOUT_S = 900

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its text and the line of its opening fence."""

    lang: str
    text: str
    line: int


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order (an indented fence, inside a list, is
    dedented by its fence's indentation)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    k = 0
    while k < len(lines):
        m = _FENCE.match(lines[k])
        if m is None:
            k += 1
            continue
        indent, fence = m["indent"], m["fence"]
        lang = m["info"].strip().split(" ")[0].lower() if m["info"].strip() else ""
        start = k + 1
        body: list[str] = []
        k += 1
        while k < len(lines):
            close = _FENCE.match(lines[k])
            if close is not None and close["fence"].startswith(fence) and not close["info"].strip():
                break
            body.append(lines[k][len(indent) :] if lines[k].startswith(indent) else lines[k])
            k += 1
        else:
            raise AssertionError(f"{path.name}:{start}: unclosed code fence")
        found.append(Block(lang, "\n".join(body) + "\n", start))
        k += 1
    return found


def _python() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.is_file() else sys.executable


def _env() -> dict[str, str]:
    env = dict(os.environ)
    bin_dir = str(Path(_python()).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    return env


#: Runs the blocks (a JSON list of [line, text]) of one document, each in a fresh namespace;
#: on the first failure prints which block and its traceback, and exits 1.
_RUNNER = r"""
import json, sys, traceback
doc, blocks = sys.argv[1], json.loads(sys.stdin.read())
for n, (line, text) in enumerate(blocks, 1):
    name = f"{doc}, python block {n} (line {line})"
    try:
        code = compile(text, name, "exec")
        exec(code, {"__name__": "__main__", "__file__": name})
    except BaseException:
        print(f"FAILED: {name}", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
    print(f"ok: {name}", flush=True)
"""


def _doc_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_documents_exist() -> None:
    for path in DOCUMENTS:
        assert path.is_file(), path


@pytest.mark.parametrize("path", DOCUMENTS, ids=_doc_id)
def test_python_is_fenced_as_python(path: Path) -> None:
    """A Python block under another fence name would silently escape the run below."""
    wrong = [(b.line, b.lang) for b in blocks(path) if b.lang in PYTHON_ALIASES]
    assert not wrong, f"{_doc_id(path)}: fence as ```python to have it run: {wrong}"


# docs/dataset.md starts a local Ray cluster: `make test` runs it, `make check` does not.
_RUN = [pytest.param(p, marks=pytest.mark.slow) if p.name == "dataset.md" else p for p in DOCUMENTS]


@pytest.mark.parametrize("path", _RUN, ids=_doc_id)
def test_python_blocks_run(path: Path) -> None:
    code = [(b.line, b.text) for b in blocks(path) if b.lang == "python"]
    if not code:
        return
    proc = subprocess.run(
        [_python(), "-c", _RUNNER, _doc_id(path)],
        input=json.dumps(code),
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    ran = proc.stdout.count("ok: ")
    assert proc.returncode == 0, (
        f"{_doc_id(path)}: {ran} of {len(code)} python blocks ran, then:\n{proc.stderr[-6000:]}"
    )
    assert ran == len(code), proc.stdout


def readme_commands() -> list[tuple[int, list[str]]]:
    """The ``sglang-mm`` commands of the README's plain and console blocks (continuation
    lines joined, comments dropped) whose subcommand is one of `QUICK_COMMANDS`."""
    out: list[tuple[int, list[str]]] = []
    for b in blocks(ROOT / "README.md"):
        if b.lang not in ("", "console", "shell", "sh", "bash"):
            continue
        command, first = "", 0
        for offset, raw in enumerate(b.text.splitlines()):
            if not command:
                first = b.line + 1 + offset
            if raw.rstrip().endswith("\\"):
                command += raw.rstrip()[:-1] + " "
                continue
            line, command = (command + raw).strip().removeprefix("$ "), ""
            if not line.startswith("sglang-mm "):
                continue
            argv = shlex.split(line, comments=True)
            if len(argv) > 1 and argv[1] in QUICK_COMMANDS:
                out.append((first, argv))
    return out


def test_readme_shows_the_quick_commands() -> None:
    shown = {argv[1] for _, argv in readme_commands()}
    assert shown == QUICK_COMMANDS, shown


@pytest.mark.parametrize(
    ("line", "argv"), readme_commands(), ids=[f"line{n}-{a[1]}" for n, a in readme_commands()]
)
def test_readme_commands_run(line: int, argv: list[str], tmp_path: Path) -> None:
    # An output file the README writes under /tmp goes to this test's folder instead.
    args = [a.replace("/tmp/", f"{tmp_path}/") if a.startswith("/tmp/") else a for a in argv]
    exe = str(Path(_python()).parent / args[0])
    proc = subprocess.run(
        [exe, *args[1:]],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, f"README.md line {line}: {shlex.join(argv)}\n{proc.stderr}"
    assert proc.stdout.strip(), f"README.md line {line}: {shlex.join(argv)} printed nothing"
    for a, b in zip(argv, args, strict=True):
        if a != b:
            assert Path(b).is_file(), f"README.md line {line}: {b} was not written"
