"""Fetch of local sources: interpretation order, bytes passthrough, base64 and data: URLs,
files under the policy, and the request budgets (docs/architecture.md)."""

from __future__ import annotations

import base64
import os
import threading
from pathlib import Path

import pytest

from sglang_mm_core._fetch import Budget, fetch_all, fetch_bytes, fetch_one, source_kind
from sglang_mm_core._fetch.policy import resolve_timeout
from sglang_mm_core._spec import FetchPolicy, Limits
from sglang_mm_core.errors import FetchError, LimitError

POLICY = FetchPolicy()
LIMITS = Limits()
DATA = bytes(range(256)) * 5


def one(source: object, policy: FetchPolicy = POLICY, limits: Limits = LIMITS, **kw: object):
    return fetch_one(source, policy=policy, limits=limits, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        (b"x", "bytes"),
        (bytearray(b"x"), "bytes"),
        (memoryview(b"x"), "bytes"),
        ("http://example.com/a.png", "http"),
        ("HTTPS://example.com/a.png", "http"),
        ("file:///tmp/a.png", "file"),
        ("/tmp/a.png", "file"),
        (Path("/tmp/a.png"), "file"),
        ("data:image/png;base64,AAAA", "data_url"),
        ("DATA:,x", "data_url"),
        ("aGVsbG8=", "base64"),
        ("  aGVsbG8=\n", "base64"),
        ("relative/path.png", "base64"),  # only absolute paths are files
        (42, "unsupported"),
    ],
)
def test_source_kind_follows_the_interpretation_order(source: object, kind: str) -> None:
    assert source_kind(source) == kind


@pytest.mark.parametrize("make", [bytes, bytearray, memoryview])
def test_bytes_like_sources_pass_through_without_a_copy(make: type) -> None:
    source = make(DATA) if make is not memoryview else memoryview(bytearray(DATA))
    fetched = one(source)
    assert fetched.kind == "bytes"
    assert fetched.data is source


def test_non_contiguous_memoryview_is_refused() -> None:
    view = memoryview(bytearray(DATA))[::2]
    with pytest.raises(FetchError, match=r"image 0 \(bytes\).*C-contiguous"):
        one(view)


def test_unsupported_source_type_is_a_fetch_error() -> None:
    with pytest.raises(FetchError, match=r"image 2 \(unsupported\): unsupported source type int"):
        one(42, item=2)


def test_bare_base64_is_trimmed_and_decoded() -> None:
    text = "\n  " + base64.b64encode(DATA).decode() + "  \n"
    fetched = one(text)
    assert fetched.kind == "base64"
    assert fetched.data == DATA


def test_invalid_base64_names_the_item() -> None:
    with pytest.raises(FetchError, match=r"image 3 \(base64\): .*not valid base64") as info:
        one("aGVs$G8=", item=3)
    assert info.value.item == 3
    assert info.value.source_kind == "base64"


def test_url_safe_alphabet_is_not_standard_base64() -> None:
    with pytest.raises(FetchError, match="not valid base64"):
        one(base64.urlsafe_b64encode(b"\xfb\xff\xfe" * 10).decode())


def test_base64_size_is_checked_before_decoding() -> None:
    # Invalid at its very end: only a size check done before decoding reports the limit.
    text = "A" * 4000 + "$$$$"
    with pytest.raises(LimitError, match=r"image 0 \(base64\).*limits.max_total_bytes"):
        one(text, limits=Limits(max_total_bytes=1000))
    with pytest.raises(FetchError, match="not valid base64"):
        one(text, limits=Limits(max_total_bytes=10_000))


def test_data_url_base64() -> None:
    url = "data:image/png;base64," + base64.b64encode(DATA).decode()
    fetched = one(url)
    assert (fetched.kind, fetched.data) == ("data_url", DATA)


def test_data_url_takes_everything_after_the_first_comma() -> None:
    url = "data:image/png;name=a.png;base64," + base64.b64encode(b"a,b,c").decode()
    assert one(url).data == b"a,b,c"


def test_data_url_percent_encoded() -> None:
    assert one("data:text/plain,a%20b%2C%ff").data == b"a b,\xff"
    with pytest.raises(LimitError, match="max_total_bytes"):
        one("data:," + "%41" * 20, limits=Limits(max_total_bytes=19))
    assert one("data:," + "%41" * 20, limits=Limits(max_total_bytes=20)).data == b"A" * 20


def test_data_url_errors_name_the_item() -> None:
    with pytest.raises(FetchError, match=r"image 1 \(data_url\): data: URL has no ','"):
        one("data:image/png;base64", item=1)
    with pytest.raises(FetchError, match=r"image 1 \(data_url\): .*not valid base64"):
        one("data:image/png;base64,@@@@", item=1)
    with pytest.raises(LimitError, match=r"image 1 \(data_url\).*max_total_bytes"):
        one("data:;base64," + "A" * 400, item=1, limits=Limits(max_total_bytes=100))


# ----- files -----


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"secret")
    inside = root / "sub" / "image.bin"
    inside.write_bytes(DATA)
    (root / "escape.bin").symlink_to(outside)
    (root / "alias.bin").symlink_to(inside)
    return {"root": root, "inside": inside, "outside": outside}


def test_file_by_path_url_and_pathlike(tree: dict[str, Path]) -> None:
    path = tree["inside"]
    for source in (str(path), "file://" + str(path), "file://localhost" + str(path), path):
        fetched = one(source)
        assert (fetched.kind, fetched.data) == ("file", DATA)


def test_file_url_is_percent_decoded(tmp_path: Path) -> None:
    path = tmp_path / "a b.bin"
    path.write_bytes(b"spaced")
    assert one("file://" + str(tmp_path) + "/a%20b.bin").data == b"spaced"


def test_file_url_with_a_remote_host_is_refused(tree: dict[str, Path]) -> None:
    with pytest.raises(FetchError, match="not local"):
        one("file://example.com" + str(tree["inside"]))


def test_allow_file_false_refuses_without_touching_the_file(tree: dict[str, Path]) -> None:
    policy = FetchPolicy(allow_file=False)
    for source in (str(tree["inside"]), "/does/not/exist", "file:///etc/hostname"):
        with pytest.raises(FetchError, match=r"\(file\): .*allow_file=false"):
            one(source, policy=policy)


def test_file_root_allows_inside_and_follows_symlinks(tree: dict[str, Path]) -> None:
    policy = FetchPolicy(file_root=str(tree["root"]))
    assert one(str(tree["inside"]), policy=policy).data == DATA
    assert one(str(tree["root"] / "alias.bin"), policy=policy).data == DATA
    assert one(str(tree["root"] / "sub" / ".." / "sub" / "image.bin"), policy=policy).data == DATA


@pytest.mark.parametrize("name", ["escape.bin", "../outside.bin", "sub/../../outside.bin"])
def test_file_root_refuses_escapes(tree: dict[str, Path], name: str) -> None:
    policy = FetchPolicy(file_root=str(tree["root"]))
    with pytest.raises(FetchError, match=r"image 4 \(file\): .*outside file_root") as info:
        one(str(tree["root"]) + "/" + name, policy=policy, item=4)
    assert "secret" not in str(info.value)


def test_file_root_refuses_a_sibling_with_the_same_prefix(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root2").mkdir()
    (tmp_path / "root2" / "x.bin").write_bytes(b"x")
    with pytest.raises(FetchError, match="outside file_root"):
        one(str(tmp_path / "root2" / "x.bin"), policy=FetchPolicy(file_root=str(tmp_path / "root")))


def test_file_root_given_through_a_symlink(tree: dict[str, Path], tmp_path: Path) -> None:
    link = tmp_path / "root-link"
    link.symlink_to(tree["root"])
    assert (
        one(str(link / "sub" / "image.bin"), policy=FetchPolicy(file_root=str(link))).data == DATA
    )


def test_missing_file_and_directory(tree: dict[str, Path]) -> None:
    with pytest.raises(FetchError, match=r"image 0 \(file\): cannot open file .*no such file"):
        one(str(tree["root"] / "missing.png"))
    with pytest.raises(FetchError, match="is a directory"):
        one(str(tree["root"]))
    with pytest.raises(FetchError, match="not a directory"):
        one(str(tree["inside"]) + "/x")


def test_bare_base64_jpeg_is_base64_not_a_path() -> None:
    # Every base64 JPEG starts with "/9j/": it must not be taken for an absolute path.
    raw = bytes(range(256)) * 3
    jpeg_like = b"\xff\xd8\xff\xe0" + raw
    text = base64.b64encode(jpeg_like).decode()
    assert text.startswith("/9j/")
    assert source_kind(text) == "base64"
    assert one(text).data == jpeg_like


def test_existing_path_made_of_base64_characters_stays_a_file(tmp_path: Path) -> None:
    name = tmp_path / ("A" * 64)
    name.write_bytes(b"content")
    assert source_kind(str(name)) == "file"
    assert one(str(name)).data == b"content"


def test_fifo_and_device_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result: list[BaseException] = []

    def run() -> None:
        try:
            one(str(fifo))
        except BaseException as err:
            result.append(err)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "opening a FIFO must not block"
    assert isinstance(result[0], FetchError) and "not a regular file" in str(result[0])
    with pytest.raises(FetchError, match="not a regular file"):
        one("/dev/zero")


def test_file_over_stream_cap_is_refused_unread(tree: dict[str, Path]) -> None:
    with pytest.raises(LimitError, match=r"image 0 \(file\).*limits.max_stream_bytes \(1000\)"):
        one(str(tree["inside"]), limits=Limits(max_stream_bytes=1000))
    exact = Limits(max_stream_bytes=len(DATA))
    assert one(str(tree["inside"]), limits=exact).data == DATA


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    assert one(str(path)).data == b""


# ----- request budgets -----


def test_max_items_is_checked_before_any_fetch(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.png")  # would fail if it were fetched
    with pytest.raises(LimitError, match=r"image 2: 3 media sources exceed limits.max_items \(2\)"):
        fetch_all([missing, missing, missing], policy=POLICY, limits=Limits(max_items=2))


def test_fetch_all_keeps_order_and_kinds(tree: dict[str, Path]) -> None:
    sources = [DATA, "data:;base64," + base64.b64encode(b"abc").decode(), str(tree["inside"])]
    got = fetch_all(sources, policy=POLICY, limits=LIMITS)
    assert [f.kind for f in got] == ["bytes", "data_url", "file"]
    assert got[0].data is DATA
    assert got[1].data == b"abc"
    assert got[2].data == DATA


def test_max_total_bytes_across_items(tree: dict[str, Path]) -> None:
    limits = Limits(max_total_bytes=2 * len(DATA) + 10)
    ok = [DATA, str(tree["inside"])]
    assert len(fetch_all(ok, policy=POLICY, limits=limits)) == 2
    with pytest.raises(LimitError, match=r"image 2 \(base64\).*max_total_bytes") as info:
        fetch_all([*ok, base64.b64encode(b"x" * 11).decode()], policy=POLICY, limits=limits)
    assert info.value.item == 2
    with pytest.raises(LimitError, match=r"image 1 \(file\).*max_total_bytes"):
        limits = Limits(max_total_bytes=len(DATA) + 5)
        fetch_all([DATA, str(tree["inside"]), DATA], policy=POLICY, limits=limits)


def test_file_stream_cap_shrinks_to_what_the_request_has_left(tree: dict[str, Path]) -> None:
    limits = Limits(max_total_bytes=len(DATA) + 100, max_stream_bytes=10 * len(DATA))
    with pytest.raises(LimitError, match=r"image 1 \(file\).*limits.max_total_bytes"):
        fetch_all([DATA, str(tree["inside"])], policy=POLICY, limits=limits)


def test_shared_budget_counts_items() -> None:
    budget = Budget(Limits(max_items=1))
    fetch_one(b"a", policy=POLICY, limits=budget.limits, item=0, budget=budget)
    with pytest.raises(LimitError, match=r"image 1 \(bytes\).*max_items"):
        fetch_one(b"b", policy=POLICY, limits=budget.limits, item=1, budget=budget)


def test_fetch_all_refuses_a_single_string() -> None:
    with pytest.raises(FetchError, match="list of sources"):
        fetch_all("aGVsbG8=", policy=POLICY, limits=LIMITS)


def test_fetch_bytes_returns_bytes(tree: dict[str, Path]) -> None:
    assert fetch_bytes(bytearray(b"abc")) == b"abc"
    assert type(fetch_bytes(bytearray(b"abc"))) is bytes
    assert fetch_bytes(str(tree["inside"])) == DATA
    with pytest.raises(FetchError, match="allow_file"):
        fetch_bytes(str(tree["inside"]), policy=FetchPolicy(allow_file=False))


def test_timeout_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REQUEST_TIMEOUT", raising=False)
    assert resolve_timeout(FetchPolicy()) == 3.0
    monkeypatch.setenv("REQUEST_TIMEOUT", "7.5")
    assert resolve_timeout(FetchPolicy()) == 7.5
    assert resolve_timeout(FetchPolicy(timeout_s=0.25)) == 0.25
    for bad in ("nope", "-1", "0", "inf"):
        monkeypatch.setenv("REQUEST_TIMEOUT", bad)
        assert resolve_timeout(FetchPolicy()) == 3.0
