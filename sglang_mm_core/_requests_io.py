"""Request files of the CLI and the demo, and the CLI's output files (written in the one layout
of `sglang_mm_core._outputs`, whose `save_output` and `output_arrays` are re-exported here).

A request file is JSON ``{"input_ids": [...], "images": ["path, URL or base64", ...]}`` (an
optional ``"rid"``), a JSON list of such objects, or JSONL with one per line. Image paths may be
relative to the request file."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._carriers import MmInput, MmOutput
from ._outputs import output_arrays, save_output
from ._positions import MRope
from ._spec import format_validation_error
from .errors import MmRequestError

_REMOTE_PREFIXES = ("http://", "https://", "file://", "data:", "/")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


class RequestDoc(BaseModel):
    """One request as written in a request file."""

    model_config = ConfigDict(extra="forbid")

    input_ids: list[int] = Field(description="Prompt token ids, one placeholder per image.")
    images: list[str] = Field(default_factory=list, description="Path, URL or base64.")
    rid: str | None = None


def _resolve_source(source: str, base: Path) -> str:
    """A relative path becomes absolute, next to the request file: when it names an existing
    file, or when it cannot be base64 (a ``.`` or other character outside the alphabet) so
    that a missing file is reported as one. URLs, absolute paths and base64 go to fetch."""
    if source.startswith(_REMOTE_PREFIXES) or len(source) > 4096:
        return source
    candidate = base / source
    try:
        if candidate.is_file():
            return str(candidate.resolve())
    except OSError:
        pass
    if _BASE64.fullmatch(source.strip()):
        return source
    return str(candidate.absolute())  # cannot be base64: a path, reported as missing


def _parse(obj: Any, where: str, base: Path) -> MmInput:
    try:
        doc = RequestDoc.model_validate(obj)
    except ValidationError as e:
        raise MmRequestError(f"{where}: " + "; ".join(format_validation_error(e))) from None
    images = [_resolve_source(s, base) for s in doc.images]
    return MmInput(input_ids=doc.input_ids, images=images, rid=doc.rid)


def read_requests(path: str | Path) -> list[MmInput]:
    """Every request of a JSON, JSON-list or JSONL file; the first bad one is raised."""
    out: list[MmInput] = []
    for req in read_requests_each(path):
        if isinstance(req, MmRequestError):
            raise req
        out.append(req)
    return out


def read_requests_each(path: str | Path) -> list[MmInput | MmRequestError]:
    """Every request of a JSON, JSON-list or JSONL file, a bad entry (invalid JSON line,
    invalid fields) as its `MmRequestError`, so a batch can report each and run the rest. An
    unreadable or empty file is raised."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise MmRequestError(f"cannot read request file {str(path)!r}: {e}") from None
    base = path.parent
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        out: list[MmInput | MmRequestError] = []
        for n, line in lines:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                out.append(MmRequestError(f"{path}:{n}: not valid JSON: {e.msg}"))
                continue
            out.append(_parse_each(obj, f"{path}:{n}", base))
        if not out:
            raise MmRequestError(f"request file {str(path)!r} holds no request") from None
        return out
    if isinstance(doc, list):
        return [_parse_each(obj, f"{path}[{k}]", base) for k, obj in enumerate(doc)]
    return [_parse_each(doc, str(path), base)]


def _parse_each(obj: Any, where: str, base: Path) -> MmInput | MmRequestError:
    try:
        return _parse(obj, where, base)
    except MmRequestError as e:
        return e


def numbered(path: Path, index: int) -> Path:
    """``out.safetensors`` -> ``out.3.safetensors`` for the request at ``index``."""
    return path.with_name(f"{path.stem}.{index}{path.suffix}")


def describe(out: MmOutput, prompt_len: int) -> Iterator[str]:
    """A readable summary of one output, line by line."""
    length = len(out.input_ids)
    yield f"family     {out.family}  (spec {out.spec_fingerprint[:16]})"
    if out.rid is not None:
        yield f"rid        {out.rid}"
    yield f"input_ids  {length} tokens (prompt {prompt_len}, {len(out.items)} image(s))"
    if isinstance(out.positions, MRope):
        shape = "x".join(map(str, out.positions.positions.shape))
        yield f"positions  MRope int64 [{shape}], delta {out.positions.delta}"
    else:
        yield f"positions  Rope1D (length {length})"
    for i, (item, (s, e)) in enumerate(zip(out.items, out.offsets, strict=True)):
        aux = ", ".join(f"{k} {t.dtype} {list(t.shape)}" for k, t in sorted(item.aux.items()))
        yield (
            f"image {i:<4} feature {item.feature.dtype} {list(item.feature.shape)}; "
            f"tokens {item.tokens} at [{s}, {e}]; hash {item.hash:016x}"
            + (f"; {aux}" if aux else "")
        )


__all__ = [
    "RequestDoc",
    "describe",
    "numbered",
    "output_arrays",
    "read_requests",
    "read_requests_each",
    "save_output",
]
