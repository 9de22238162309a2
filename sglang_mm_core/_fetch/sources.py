"""Sources that need no network: the interpretation order of a source, in-memory bytes,
`data:` URLs, bare base64 and files (under `allow_file` and `file_root`)."""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import TypeAlias
from urllib.parse import unquote, urlsplit

from .. import _native
from .._spec import FetchPolicy
from ..errors import FetchError, KernelArgumentError
from .budget import Budget

Source: TypeAlias = str | bytes | bytearray | memoryview | os.PathLike[str]
Buffer: TypeAlias = bytes | bytearray | memoryview

_CHUNK = 1 << 20
# RFC 2397 puts no bound on a data: URL's media type and parameters; real ones are a few
# dozen characters. Past this the ',' is not looked for (nor the header copied).
MAX_DATA_URL_HEADER = 4096
_BASE64ISH = re.compile(r"[A-Za-z0-9+/]{60,}={0,2}")


def source_kind(source: object) -> str:
    """The documented interpretation order: http(s) URL, file URL, absolute path, data: URL,
    else bare base64. Bytes-like objects are "bytes"; anything else is "unsupported".

    One exception to the order: every base64 JPEG starts with "/9j/", so a string starting
    with "/" that is long, made only of base64 characters (no dot, dash or underscore, which
    nearly every real path has) and names no existing file is taken as base64."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "bytes"
    if isinstance(source, str):
        head = source[:8].lower()
        if head.startswith(("http://", "https://")):
            return "http"
        if head.startswith("file://"):
            return "file"
        if source.startswith("/"):
            if _BASE64ISH.fullmatch(source.strip()) and not os.path.exists(source):
                return "base64"
            return "file"
        if head.startswith("data:"):
            return "data_url"
        return "base64"
    if isinstance(source, os.PathLike):
        return "file"
    return "unsupported"


def describe(source: str, limit: int = 80) -> str:
    """A source for an error message: quoted, and cut short (it may be megabytes of base64)."""
    return repr(source) if len(source) <= limit else repr(source[:limit]) + "..."


def passthrough(source: Buffer, budget: Budget) -> Buffer:
    """In-memory bytes are used as they are (no copy); only their size is charged."""
    if isinstance(source, memoryview) and not source.c_contiguous:
        raise FetchError("memoryview source must be C-contiguous")
    size = source.nbytes if isinstance(source, memoryview) else len(source)
    budget.charge(size)
    return source


def _check_decoded(size: int, budget: Budget, what: str) -> None:
    """Refuse, before decoding, an encoded source whose decoded size (exact, or a lower bound)
    is over the stream cap (`max_stream_bytes`, or what is left of `max_total_bytes`)."""
    cap, limit = budget.stream_cap()
    if size > cap:
        raise budget.over_cap(limit, f"decoded {what} of {size} bytes or more")


def decode_base64(
    text: str, budget: Budget, what: str = "base64 source", start: int = 0, sniff: bool = False
) -> bytes:
    """Standard-alphabet base64 from ``text[start:]`` (never sliced out: a payload far inside a
    huge string is read in place), surrounding whitespace trimmed. The decoded size is
    checked against the stream cap and the request budget before anything is decoded; with
    ``sniff`` (an image source) the first bytes must be an image format we decode."""
    if not text.isascii():  # O(1) for a str; base64 is ASCII, and a non-ASCII str has no
        # UTF-8 form to borrow (the kernel would copy it whole to refuse it)
        raise FetchError(f"{what} is not valid base64 (it holds a non-ASCII character)")
    _check_decoded(_native.base64_decoded_len(text, start), budget, what)
    try:
        data = _native.base64_decode(text, start, sniff)
    except KernelArgumentError as err:
        raise FetchError(f"{what} is not valid base64 ({err})") from None
    budget.charge(len(data), f"decoded {what}")
    return data


def decode_data_url(url: str, budget: Budget, sniff: bool = False) -> bytes:
    """RFC 2397: `data:[<mediatype>][;base64],<data>`. With `;base64` the part after the first
    comma is base64; without it the data is percent-encoded text. Either way the payload is
    decoded natively where it lies in ``url`` and its exact decoded size is checked first;
    ``sniff`` as in `decode_base64`."""
    comma = url.find(",", 5, 5 + MAX_DATA_URL_HEADER + 1)
    if comma < 0:
        if len(url) > 5 + MAX_DATA_URL_HEADER:
            raise FetchError(
                f"data: URL has no ',' within its first {MAX_DATA_URL_HEADER} characters (its "
                "media type and parameters)"
            )
        raise FetchError("data: URL has no ',' before its data")
    header = url[5:comma]
    params = [p.strip().lower() for p in header.split(";")]
    if len(params) > 1 and params[-1] == "base64":
        return decode_base64(url, budget, "data: URL payload", comma + 1, sniff)
    return _decode_percent(url, comma + 1, budget, "data: URL payload", sniff)


def _decode_percent(text: str, start: int, budget: Budget, what: str, sniff: bool) -> bytes:
    """Percent-decoding of ``text[start:]`` in the kernel, straight into the result: its exact
    size is counted first (without allocating) and checked against the cap, so an oversized
    payload costs one scan and an undersized one a single buffer. A non-ASCII text is read as
    its UTF-8, as `urllib.parse.unquote_to_bytes` reads it."""
    at = start if text.isascii() else len(text[:start].encode("utf-8", "surrogatepass"))
    try:
        _check_decoded(_native.percent_decoded_len(text, at), budget, what)
        data = _native.percent_decode(text, at, sniff)
    except KernelArgumentError as err:  # a str with no UTF-8 form
        raise FetchError(f"{what} is not Unicode text ({err})") from None
    budget.charge(len(data), f"decoded {what}")
    return data


def file_path(source: str | os.PathLike[str]) -> str:
    """The path a file source names: a `file://` URL (local host only, percent-decoded) or a
    path taken literally."""
    if not isinstance(source, str):
        return os.fspath(source)
    if not source[:7].lower().startswith("file://"):
        return source
    parts = urlsplit(source)
    if parts.netloc not in ("", "localhost"):
        raise FetchError(f"file URL host {parts.netloc!r} is not local")
    path = unquote(parts.path)
    if not path.startswith("/"):
        raise FetchError(f"file URL {describe(source)} has no absolute path")
    return path


def _looks_base64(source: object) -> str:
    """A hint for a base64 string (a JPEG's starts with "/9j/") taken for a path."""
    if isinstance(source, str) and _BASE64ISH.fullmatch(source.strip()):
        return " (this looks like base64: send it as a data: URL)"
    return ""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def read_file(source: str | os.PathLike[str], policy: FetchPolicy, budget: Budget) -> bytes:
    """Read a file under the policy, cut one byte past its cap. The file is opened first and
    its real path checked through the open descriptor, so a symlink swapped in after the check
    cannot escape `file_root`."""
    if not policy.allow_file:
        raise FetchError(
            f"file sources are refused by fetch policy allow_file=false{_looks_base64(source)}"
        )
    path = file_path(source)
    shown = describe(path)
    _check_path(path, shown)
    root = os.path.realpath(policy.file_root) if policy.file_root is not None else None
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError) as err:
        raise FetchError(f"invalid file path {shown}: {err}") from None
    if root is not None and not _inside(real, root):
        raise FetchError(f"file {shown} is outside file_root, refused by fetch policy file_root")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        hint = _looks_base64(source) if err.errno == errno.ENOENT else ""
        raise FetchError(f"cannot open file {shown}: {_reason(err)}{hint}") from None
    except ValueError as err:  # anything `_check_path` missed
        raise FetchError(f"invalid file path {shown}: {err}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FetchError(f"file {shown} is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise FetchError(f"file {shown} is not a regular file")
        if root is not None and not _inside(_opened_path(fd, path), root):
            raise FetchError(
                f"file {shown} is outside file_root, refused by fetch policy file_root"
            )
        return _read_capped(fd, info.st_size, budget, shown)
    except OSError as err:
        raise FetchError(f"cannot read file {shown}: {_reason(err)}") from None
    finally:
        os.close(fd)


def _check_path(path: str, shown: str) -> None:
    """A path the OS cannot take (a NUL byte, text that has no file-system encoding) is the
    client's error, not a ValueError deep in `os`."""
    if not isinstance(path, str) or not path:
        raise FetchError(f"invalid file path {shown}: it must be a non-empty string")
    if "\x00" in path:
        raise FetchError(f"invalid file path {shown}: it contains a NUL byte")
    try:
        os.fsencode(path)
    except (UnicodeError, ValueError) as err:
        raise FetchError(f"invalid file path {shown}: {err}") from None


def _opened_path(fd: int, path: str) -> str:
    """The real path of an open descriptor (Linux: /proc/self/fd); elsewhere the path resolved
    again, accepted only if it is still the very file that was opened."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(path)
        a, b = os.fstat(fd), os.stat(real)
        if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
            raise FetchError(f"file {describe(path)} changed while it was opened") from None
        return real


def _read_capped(fd: int, size_hint: int, budget: Budget, shown: str) -> bytes:
    cap, limit = budget.stream_cap()
    if size_hint > cap:
        raise budget.over_cap(limit, f"file {shown} of {size_hint} bytes")
    chunks: list[bytes] = []
    have = 0
    want = size_hint + 1  # usually the whole file in one read; the +1 detects growth
    while True:
        chunk = os.read(fd, min(want, cap + 1 - have))
        if not chunk:
            break
        chunks.append(chunk)
        have += len(chunk)
        if have > cap:
            raise budget.over_cap(limit, f"file {shown} (read {have} bytes so far)")
        want = _CHUNK
    data = b"".join(chunks)  # one chunk: the very same object, no copy
    budget.charge(len(data), f"file {shown}")
    return data


def _reason(err: OSError) -> str:
    reasons = {
        errno.ENOENT: "no such file",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOTDIR: "a path component is not a directory",
        errno.EISDIR: "it is a directory",
        errno.ELOOP: "too many levels of symbolic links",
        errno.ENAMETOOLONG: "file name too long",
    }
    return reasons.get(err.errno or 0, err.strerror or str(err))
