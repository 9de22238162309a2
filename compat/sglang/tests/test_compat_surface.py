"""The module layout, the signatures, the errors and the thread rule of
`sglang_mm_sglang`, against SGLang's extension itself."""

from __future__ import annotations

import inspect
import os
import struct
import subprocess
import sys
import zlib
from types import ModuleType

import pytest
import sglang_mm_sglang as compat
from compat_helpers import EXT_NAME, EXT_PATH, photo
from sglang_mm_sglang import _support, common
from sglang_mm_sglang.errors import (
    DecodeValueError,
    LayoutValueError,
    LimitValueError,
    SpecValueError,
    as_value_error,
)

from sglang_mm_core.errors import (
    DecodeError,
    FetchError,
    KernelArgumentError,
    LayoutError,
    LimitError,
    MmError,
    PluginError,
    SpecError,
)
from sglang_mm_core.plugin import resolve_threads

SUBMODULES = ("common", "dsv41", "inkling", "qwen_vl")


def huge_png_header() -> bytes:
    """A PNG that says it is 20000 x 20000: refused from the header (the extension would
    try to allocate it)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    ihdr = struct.pack(">IIBBBBB", 20_000, 20_000, 8, 2, 0, 0, 0)
    idat = chunk(b"IDAT", zlib.compress(b"\x00" * 64))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + idat + chunk(b"IEND", b"")


def functions(module: ModuleType) -> dict[str, object]:
    return {
        n: getattr(module, n)
        for n in dir(module)
        if not n.startswith("_") and callable(getattr(module, n))
    }


def test_extension_loads_under_its_name(ext: ModuleType) -> None:
    assert ext.__name__ == EXT_NAME and ext.__file__ == str(EXT_PATH)
    assert "sglang" not in sys.modules  # only the one file, never the package
    assert set(SUBMODULES) < set(dir(ext))


@pytest.mark.parametrize("sub", SUBMODULES)
def test_same_functions_and_parameters(ext: ModuleType, sub: str) -> None:
    theirs = functions(getattr(ext, sub))
    ours = getattr(compat, sub)
    assert set(ours.__all__) == set(theirs), sub
    for name, fn in theirs.items():
        want = inspect.signature(fn)  # type: ignore[arg-type]
        got = inspect.signature(getattr(ours, name))
        assert [(p.name, p.kind, p.default) for p in got.parameters.values()] == [
            (p.name, p.kind, p.default) for p in want.parameters.values()
        ], f"{sub}.{name}: {got} vs {want}"


def test_every_submodule_of_the_extension_is_provided(ext: ModuleType) -> None:
    theirs = {n for n in dir(ext) if isinstance(getattr(ext, n), ModuleType)}
    assert theirs == set(SUBMODULES) == set(compat.SUBMODULES)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        compat.nope  # noqa: B018
    assert set(SUBMODULES) <= set(dir(compat))


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGL_MM", "SGLANG_MM_"))}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    ("plugin", "sub", "dist"),
    [
        ("sglang_mm_inkling", "inkling", "sglang-mm-inkling"),
        ("sglang_mm_qwen_vl", "qwen_vl", "sglang-mm-qwen-vl"),
        ("sglang_mm_deepseek_v41", "dsv41", "sglang-mm-deepseek-v41"),
    ],
)
def test_missing_plugin_is_an_import_error_naming_the_distribution(
    plugin: str, sub: str, dist: str
) -> None:
    """The core does not need the plugins: without one, `common` works and the submodule's
    import fails with an `ImportError` (what SGLang's callers catch) saying what to install."""
    code = (
        "import sys\n"
        f"sys.modules[{plugin!r}] = None  # as if not installed\n"
        "import sglang_mm_sglang as c\n"
        "assert c.common.content_hash(b'x') > 0\n"
        "try:\n"
        f"    c.{sub}\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e.name, e)\n"
    )
    res = _run(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == (
        f"ImportError {plugin} sglang_mm_sglang.{sub} needs the {plugin} plugin: pip install {dist}"
    )


def test_a_broken_plugin_keeps_its_own_error() -> None:
    err = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert _support.missing_plugin(err, "sglang-mm-inkling", "inkling") is err


# -- errors -------------------------------------------------------------------------------


def test_value_errors_are_also_our_typed_errors(ext: ModuleType) -> None:
    for fn in (common.image_decode_rgb, ext.common.image_decode_rgb):
        with pytest.raises(ValueError):
            fn(b"not an image")
    with pytest.raises(DecodeError) as info:
        common.image_decode_rgb(b"not an image")
    assert isinstance(info.value, DecodeValueError) and isinstance(info.value, ValueError)
    assert info.value.format is None and str(info.value) == str(
        as_value_error(DecodeError(str(info.value)))
    )

    with pytest.raises(LimitError) as limit:
        common.image_decode_rgb(huge_png_header())
    assert isinstance(limit.value, ValueError) and isinstance(limit.value, LimitValueError)
    assert limit.value.limit == "max_image_pixels"

    from sglang_mm_sglang import qwen_vl

    with pytest.raises(SpecError) as spec:
        qwen_vl.preprocess(b"x", "{")
    assert isinstance(spec.value, ValueError) and isinstance(spec.value, SpecValueError)
    assert str(spec.value).startswith("qwen_vl spec: ")
    with pytest.raises(ValueError, match="qwen_vl spec"):
        ext.qwen_vl.preprocess(b"x", "{")


def test_as_value_error_keeps_message_item_and_fields() -> None:
    err = LimitError("too big", limit="max_image_pixels", limit_value=10, value=11).at_item(2)
    out = as_value_error(err)
    assert type(out) is LimitValueError and isinstance(out, ValueError)
    assert str(out) == str(err) == "image 2: too big"
    assert out.item == 2 and out.fields == err.fields
    layout = as_value_error(LayoutError("bad prompt"))
    assert isinstance(layout, LayoutValueError) and isinstance(layout, ValueError)
    assert isinstance(as_value_error(FetchError("no")), ValueError)
    kernel = KernelArgumentError("already a ValueError")
    assert as_value_error(kernel) is kernel
    bug = PluginError("a plugin bug, not bad input")
    assert as_value_error(bug) is bug and not isinstance(bug, ValueError)
    assert issubclass(DecodeValueError, MmError)


# -- threads ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ours", "theirs", "want"),
    [
        (None, None, "default"),
        ("3", None, 3),
        (None, "1", 1),
        ("3", "1", 3),  # ours wins
        ("0", "5", 0),  # ours: 0 is inline
        (None, "0", "default"),  # theirs: 0 is the default pool, as rayon reads it
        ("", "2", 2),  # blank is unset
    ],
)
def test_thread_precedence(
    monkeypatch: pytest.MonkeyPatch, ours: str | None, theirs: str | None, want: int | str
) -> None:
    for name, value in (("SGLANG_MM_THREADS", ours), ("SGL_MM_RS_THREADS", theirs)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    default = resolve_threads(None) if ours in (None, "") else None
    expected = default if want == "default" else want
    assert _support.threads() == expected
    # Outside the compat API, SGLang's variable is not read.
    monkeypatch.setenv("SGL_MM_RS_THREADS", "7")
    if ours in (None, ""):
        assert resolve_threads(None, cores=2) == 2


def test_bad_extension_thread_count_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SGLANG_MM_THREADS", raising=False)
    monkeypatch.setenv("SGL_MM_RS_THREADS", "many")
    with pytest.raises(SpecError, match="SGL_MM_RS_THREADS must be a non-negative integer"):
        _support.threads()
    with pytest.raises(ValueError, match="SGL_MM_RS_THREADS"):
        common.resize_rgb(photo(8, 8), 4, 4)


def test_compat_errors_pickle_whole() -> None:
    import pickle

    from sglang_mm_sglang import common
    from sglang_mm_sglang.errors import LimitValueError

    try:
        common.image_decode_rgb(b"not an image")
    except ValueError as e:
        err: Exception = e
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err) and isinstance(back, ValueError)
    limit = LimitValueError("over", limit="max_items", limit_value=1, value=2)
    assert pickle.loads(pickle.dumps(limit)).fields == limit.fields
