"""``python -m sglang_mm_core._demo EXAMPLES``: what ``make demo`` runs.

First the core kernels on every bundled image (header probe, decode, content hash), then, for
each ``EXAMPLES/<dir>/`` holding a ``spec.json`` and a ``request.json`` whose family is
installed, the whole pipeline (with the header-only token count beside it)."""

from __future__ import annotations

import sys
from pathlib import Path

from . import _native
from ._driver import pipeline_from_spec
from ._registry import default_registry
from ._requests_io import describe, read_requests
from ._spec import read_spec_document
from .errors import MmError

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp"}


def show_images(root: Path) -> bool:
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
    print(f"== core kernels on {len(files)} bundled image(s) ==")
    ok = True
    for path in files:
        data = path.read_bytes()
        name = str(path.relative_to(root))
        try:
            w, h = _native.image_dimensions(data)
            rgb = _native.image_decode_rgb(data)
        except MmError as e:
            print(f"  {name:<28} error: {type(e).__name__}: {e}")
            ok = False
            continue
        print(
            f"  {name:<28} {len(data):>7} bytes  header {w}x{h}  decoded {list(rgb.shape)} "
            f"{rgb.dtype}  hash {_native.content_hash(data):016x}"
        )
    return ok


def run_examples(root: Path) -> bool:
    families = default_registry().families()
    names = ", ".join(f"{n} ({i.distribution} {i.version})" for n, i in sorted(families.items()))
    print(f"\n== families installed: {names or 'none'} ==")
    ok = True
    for spec_path in sorted(root.glob("*/spec.json")):
        request_path = spec_path.with_name("request.json")
        if not request_path.is_file():
            continue
        family = read_spec_document(spec_path).get("family")
        where = spec_path.parent.name
        if family not in families:
            print(
                f"\n-- {where}: family {family!r} is not installed; skipped "
                f"(pip install ./plugins/{family})"
            )
            continue
        print(f"\n-- {where}: {spec_path.relative_to(root.parent)} + request.json")
        try:
            with pipeline_from_spec(spec_path) as pipe:
                for req in read_requests(request_path):
                    out = pipe.process(req)
                    for line in describe(out, len(req.input_ids)):
                        print("   " + line)
                    count = pipe.count_tokens(req)
                    same = count.length == len(out.input_ids)
                    print(
                        f"   header-only count: {count.length} tokens, per image "
                        f"{count.per_item} ({'matches' if same else 'DIFFERS from'} the pipeline)"
                    )
                    ok = ok and same
        except MmError as e:
            print(f"   error: {type(e).__name__}: {e}")
            ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0] if args else "examples").resolve()
    if not root.is_dir():
        print(f"demo: {root} is not a directory", file=sys.stderr)
        return 2
    ok = show_images(root)
    ok = run_examples(root) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
