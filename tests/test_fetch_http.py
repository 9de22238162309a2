"""Fetch over HTTP against a real server on 127.0.0.1 (tests/http_server.py): downloads, status
errors, whole-download timeouts, streams cut at their cap, redirects re-checked per hop, the
host policy (allowed_domains, private networks, connecting to the checked address) and proxies
from the environment with NO_PROXY."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from http_server import LocalHTTPServer, payload

from sglang_mm_core._fetch import fetch_all, fetch_one
from sglang_mm_core._fetch.policy import address_class, domain_allowed
from sglang_mm_core._spec import FetchPolicy, Limits
from sglang_mm_core.errors import FetchError, LimitError

POLICY = FetchPolicy()
LIMITS = Limits()
BIG = 64 << 20  # bodies the client must never read to the end
PUBLIC_IP = "93.184.216.34"  # only ever named to a local fake proxy, never connected to


def get(url: str, policy: FetchPolicy = POLICY, limits: Limits = LIMITS, **kw: Any) -> bytes:
    fetched = fetch_one(url, policy=policy, limits=limits, **kw)
    assert fetched.kind == "http"
    return bytes(fetched.data)


@pytest.mark.parametrize("route", ["bytes", "stream", "chunked"])
def test_download(http_server: LocalHTTPServer, route: str) -> None:
    n = 300_000
    assert get(http_server.url(f"/{route}/{n}")) == payload(n)
    (seen,) = http_server.wait_done()
    assert seen.headers["accept-encoding"] == "identity"
    assert not seen.proxied


def test_empty_body_and_registered_content(http_server: LocalHTTPServer) -> None:
    assert get(http_server.url("/bytes/0")) == b""
    url = http_server.put("cat.png", b"\x89PNG fake", "image/png")
    assert get(url) == b"\x89PNG fake"


@pytest.mark.parametrize("status", [404, 500, 403])
def test_error_status_is_a_fetch_error_with_the_status(
    http_server: LocalHTTPServer, status: int
) -> None:
    with pytest.raises(FetchError, match=rf"image 5 \(http\): HTTP status {status}") as info:
        get(http_server.url(f"/status/{status}"), item=5)
    assert (info.value.item, info.value.source_kind) == (5, "http")


def test_unexpected_status_and_refused_connection(http_server: LocalHTTPServer) -> None:
    with pytest.raises(FetchError, match="unexpected HTTP status 304"):
        get(http_server.url("/status/304"))
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(FetchError, match=r"\(http\): connection failed.*refused"):
        get(f"http://127.0.0.1:{port}/x")


def test_malformed_url_is_a_fetch_error() -> None:
    with pytest.raises(FetchError, match=r"\(http\): invalid URL"):
        get("http://[::1/x")
    with pytest.raises(FetchError, match=r"\(http\): invalid URL"):
        get("http://127.0.0.1:99999/x")


def test_url_credentials_are_sent_but_never_shown(http_server: LocalHTTPServer) -> None:
    url = f"http://user:s3cret@127.0.0.1:{http_server.port}/status/404"
    with pytest.raises(FetchError, match="HTTP status 404") as info:
        get(url)
    assert "s3cret" not in str(info.value)
    (seen,) = http_server.wait_done()
    assert seen.headers["authorization"].startswith("Basic ")


# ----- timeouts bound the whole download -----


@pytest.mark.parametrize("route", ["/slow/200?interval=0.05", "/slow-headers?interval=0.05"])
def test_slow_trickle_is_cut_at_the_deadline(http_server: LocalHTTPServer, route: str) -> None:
    # Every byte arrives well within the timeout, so only a whole-download deadline trips;
    # the full response would take 10 s.
    start = time.monotonic()
    with pytest.raises(FetchError, match=r"image 0 \(http\): download timed out after 0.4 s"):
        get(http_server.url(route), policy=FetchPolicy(timeout_s=0.4))
    assert time.monotonic() - start < 3.0
    (seen,) = http_server.wait_done()
    assert seen.client_gone


def test_request_timeout_environment_variable(
    http_server: LocalHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REQUEST_TIMEOUT", "0.3")
    with pytest.raises(FetchError, match=r"timed out after 0.3 s"):
        get(http_server.url("/slow/200?interval=0.05"))
    # The spec's timeout wins over the environment.
    with pytest.raises(FetchError, match=r"timed out after 0.2 s"):
        get(http_server.url("/slow/200?interval=0.05"), policy=FetchPolicy(timeout_s=0.2))


def test_timeout_spans_redirect_hops(http_server: LocalHTTPServer) -> None:
    slow = quote("/slow/200?interval=0.05")
    with pytest.raises(FetchError, match=r"timed out after 0.4 s"):
        get(http_server.url(f"/redirect-to?url={slow}"), policy=FetchPolicy(timeout_s=0.4))


# ----- streams cut at their cap -----


def test_content_length_over_cap_is_refused_before_reading(http_server: LocalHTTPServer) -> None:
    with pytest.raises(
        LimitError, match=r"image 1 \(http\): Content-Length 67108864 .*limits.max_stream_bytes"
    ):
        get(http_server.url(f"/bytes/{BIG}"), limits=Limits(max_stream_bytes=1 << 20), item=1)
    (seen,) = http_server.wait_done()
    assert seen.client_gone
    assert seen.sent < BIG // 4


@pytest.mark.parametrize("route", ["stream", "chunked"])
def test_body_without_length_is_cut_one_byte_past_the_cap(
    http_server: LocalHTTPServer, route: str
) -> None:
    cap = 100_000
    with pytest.raises(LimitError, match=rf"cut after {cap + 1} bytes.*max_stream_bytes \({cap}\)"):
        get(http_server.url(f"/{route}/{BIG}"), limits=Limits(max_stream_bytes=cap))
    (seen,) = http_server.wait_done()
    assert seen.client_gone
    assert seen.sent < BIG // 4


def test_body_exactly_at_the_cap_is_accepted(http_server: LocalHTTPServer) -> None:
    cap = 50_000
    for route in ("bytes", "stream", "chunked"):
        assert get(http_server.url(f"/{route}/{cap}"), limits=Limits(max_stream_bytes=cap)) == (
            payload(cap)
        )


def test_max_total_bytes_across_http_items(http_server: LocalHTTPServer) -> None:
    limits = Limits(max_total_bytes=1500)
    urls = [http_server.url("/bytes/1000"), http_server.url("/stream/1000")]
    with pytest.raises(LimitError, match=r"image 1 \(http\).*limits.max_total_bytes \(1500"):
        fetch_all(urls, policy=POLICY, limits=limits)
    got = fetch_all(urls, policy=POLICY, limits=Limits(max_total_bytes=2000))
    assert [bytes(f.data) for f in got] == [payload(1000), payload(1000)]


def test_max_items_before_any_request(http_server: LocalHTTPServer) -> None:
    urls = [http_server.url("/bytes/10")] * 3
    with pytest.raises(LimitError, match="max_items"):
        fetch_all(urls, policy=POLICY, limits=Limits(max_items=2))
    assert http_server.seen == []


# ----- redirects -----


def test_redirect_chain_of_three(http_server: LocalHTTPServer) -> None:
    assert get(http_server.url("/redirect/3")) == payload(16)
    assert [s.path for s in http_server.wait_done()] == [
        "/redirect/3",
        "/redirect/2",
        "/redirect/1",
        "/redirect/0",
    ]


@pytest.mark.parametrize("status", [301, 303, 307, 308])
def test_redirect_statuses(http_server: LocalHTTPServer, status: int) -> None:
    assert get(http_server.url(f"/redirect/1?status={status}")) == payload(16)


def test_five_redirects_ok_six_refused(http_server: LocalHTTPServer) -> None:
    assert get(http_server.url("/redirect/5")) == payload(16)
    http_server.reset()
    with pytest.raises(FetchError, match=r"image 0 \(http\): more than 5 redirects"):
        get(http_server.url("/redirect/6"))
    assert len(http_server.wait_done()) == 6  # the 7th request was never sent


def test_redirect_to_a_refused_host(http_server: LocalHTTPServer) -> None:
    policy = FetchPolicy(allowed_domains=["127.0.0.1"])
    target = quote(f"http://localhost:{http_server.port}/bytes/16")
    with pytest.raises(FetchError, match="'localhost' refused by fetch policy allowed_domains"):
        get(http_server.url(f"/redirect-to?url={target}"), policy=policy)
    assert len(http_server.wait_done()) == 1


@pytest.mark.parametrize("target", ["file:///etc/hostname", "data:,x", "ftp://127.0.0.1/x"])
def test_redirect_to_another_scheme_is_refused(http_server: LocalHTTPServer, target: str) -> None:
    with pytest.raises(FetchError, match=r"redirect 1 to .*only http and https"):
        get(http_server.url(f"/redirect-to?url={quote(target)}"))


def test_relative_redirect(http_server: LocalHTTPServer) -> None:
    assert get(http_server.url("/redirect-to?url=../bytes/7")) == payload(7)


# ----- host policy -----


def test_allowed_domains(http_server: LocalHTTPServer) -> None:
    url = http_server.url("/bytes/10")
    assert get(url, policy=FetchPolicy(allowed_domains=["127.0.0.1"])) == payload(10)
    with pytest.raises(FetchError, match=r"image 0 \(http\): host '127.0.0.1' refused .*"):
        get(url, policy=FetchPolicy(allowed_domains=["example.com"]))
    with pytest.raises(FetchError, match="allowed_domains"):
        get(url, policy=FetchPolicy(allowed_domains=[]))
    assert len(http_server.seen) == 1


def test_domain_rules() -> None:
    assert domain_allowed("Example.COM.", ["example.com"])
    assert not domain_allowed("img.example.com", ["example.com"])
    assert domain_allowed("img.example.com", ["*.example.com"])
    assert domain_allowed("a.b.example.com", [".example.com"])
    assert not domain_allowed("example.com", ["*.example.com"])
    assert not domain_allowed("badexample.com", ["*.example.com"])
    assert domain_allowed("xn--bcher-kva.example", ["bücher.example"])


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "[::1]", "2130706433", "127.1", "0.0.0.0"]
)
def test_private_address_refused(http_server: LocalHTTPServer, host: str) -> None:
    policy = FetchPolicy(allow_private_networks=False)
    with pytest.raises(FetchError, match=r"image 0 \(http\): host .*allow_private_networks=false"):
        get(f"http://{host}:{http_server.port}/bytes/10", policy=policy)
    assert http_server.seen == []


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "non-public"),
        ("224.0.0.1", "multicast"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::7f00:1", "loopback"),
        ("2002:a00:1::", "private"),
        (PUBLIC_IP, None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_address_classes(address: str, why: str | None) -> None:
    import ipaddress

    assert address_class(ipaddress.ip_address(address)) == why


# ----- proxies and the checked address -----


def _clear_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def proxy(
    http_server: LocalHTTPServer,
    make_http_server: Callable[..., LocalHTTPServer],
    monkeypatch: pytest.MonkeyPatch,
) -> LocalHTTPServer:
    """A second local server acting as the HTTP proxy (it serves absolute-form requests)."""
    server = make_http_server()
    monkeypatch.setenv("HTTP_PROXY", server.origin)
    return server


def test_http_proxy_receives_the_absolute_form_request(
    http_server: LocalHTTPServer, proxy: LocalHTTPServer
) -> None:
    url = http_server.url("/bytes/10")
    assert get(url) == payload(10)
    (seen,) = proxy.wait_done()
    assert seen.proxied and seen.target == url
    assert http_server.seen == []


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "127.0.0.0/8", "localhost,127.0.0.1", "*"])
def test_no_proxy_goes_direct(
    http_server: LocalHTTPServer,
    proxy: LocalHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    no_proxy: str,
) -> None:
    monkeypatch.setenv("NO_PROXY", no_proxy)
    assert get(http_server.url("/bytes/10")) == payload(10)
    assert proxy.seen == []
    (seen,) = http_server.wait_done()
    assert not seen.proxied


def test_no_proxy_host_port_entries(
    http_server: LocalHTTPServer, proxy: LocalHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://localhost:{http_server.port}/bytes/10"
    monkeypatch.setenv("NO_PROXY", f"localhost:{http_server.port}")
    assert get(url) == payload(10)
    assert proxy.seen == [] and len(http_server.seen) == 1
    monkeypatch.setenv("NO_PROXY", f"localhost:{http_server.port + 1}, 10.0.0.0/8")
    assert get(url) == payload(10)
    assert [s.target for s in proxy.wait_done()] == [url]


def test_lowercase_and_all_proxy(
    http_server: LocalHTTPServer,
    make_http_server: Callable[..., LocalHTTPServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = make_http_server()
    url = http_server.url("/bytes/10")
    monkeypatch.setenv("ALL_PROXY", server.origin)
    assert get(url) == payload(10)
    monkeypatch.delenv("ALL_PROXY")
    monkeypatch.setenv("http_proxy", server.origin)
    assert get(url) == payload(10)
    monkeypatch.delenv("http_proxy")
    monkeypatch.setenv("HTTPS_PROXY", server.origin)  # not used for http:// URLs
    assert get(url) == payload(10)
    assert len(server.wait_done()) == 2 and len(http_server.seen) == 1


class FakeDNS:
    """Names under .test resolve to the next answer of their list (the last one repeats) and
    every lookup is logged; other names resolve normally. Only the test's resolver is faked:
    the addresses are handed to a local fake proxy, never connected to."""

    def __init__(self) -> None:
        self.answers: dict[str, list[list[str]]] = {}
        self.calls: list[str] = []
        self._real = socket.getaddrinfo

    def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if not (isinstance(name, str) and name.endswith(".test")):
            return self._real(host, port, *args, **kwargs)
        self.calls.append(name)
        queue = self.answers[name]
        if not queue:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        addrs = queue.pop(0) if len(queue) > 1 else queue[0]
        return [
            (
                socket.AF_INET6 if ":" in a else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (a, int(port or 0)),
            )
            for a in addrs
        ]


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    dns = FakeDNS()
    monkeypatch.setattr(socket, "getaddrinfo", dns.getaddrinfo)
    return dns


def test_checked_address_is_the_one_connected_to(proxy: LocalHTTPServer, fake_dns: FakeDNS) -> None:
    # A rebinding name: public on the first lookup, loopback on any later one. The request must
    # name the address that was checked (the proxy connects where the request line says).
    fake_dns.answers["rebind.test"] = [[PUBLIC_IP], ["127.0.0.1"]]
    policy = FetchPolicy(allow_private_networks=False)
    assert get("http://rebind.test:8080/bytes/12", policy=policy) == payload(12)
    (seen,) = proxy.wait_done()
    assert seen.target == f"http://{PUBLIC_IP}:8080/bytes/12"
    assert seen.headers["host"] == "rebind.test:8080"
    assert fake_dns.calls == ["rebind.test"]  # resolved once


def test_name_with_any_private_address_is_refused(
    proxy: LocalHTTPServer, fake_dns: FakeDNS
) -> None:
    fake_dns.answers["mixed.test"] = [[PUBLIC_IP, "10.0.0.7"]]
    fake_dns.answers["v6.test"] = [["::ffff:192.168.0.1"]]
    policy = FetchPolicy(allow_private_networks=False)
    with pytest.raises(FetchError, match=r"'mixed.test' \(10.0.0.7\) is a private address"):
        get("http://mixed.test/x", policy=policy)
    with pytest.raises(FetchError, match=r"'v6.test' \(::ffff:\S+\) is a private"):
        get("http://v6.test/x", policy=policy)
    fake_dns.answers["nx.test"] = []
    with pytest.raises(FetchError, match=r"cannot resolve host 'nx\.test'"):
        get("http://nx.test/x", policy=policy)
    assert proxy.seen == []


def test_redirect_from_a_public_host_to_loopback_is_refused(
    http_server: LocalHTTPServer, proxy: LocalHTTPServer, fake_dns: FakeDNS
) -> None:
    fake_dns.answers["public.test"] = [[PUBLIC_IP]]
    target = quote(http_server.url("/bytes/10"))
    policy = FetchPolicy(allow_private_networks=False)
    with pytest.raises(FetchError, match=r"redirect 1 to .*127.0.0.1 is a loopback address"):
        get(f"http://public.test/redirect-to?url={target}", policy=policy)
    assert len(proxy.wait_done()) == 1
    assert http_server.seen == []


# ----- TLS through a CONNECT proxy, pinned to the checked address -----


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl command not available to make a test certificate")
    d = tmp_path_factory.mktemp("tls")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=sglang-mm test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign")  # fmt: skip
    run("req", *ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=secure.test")
    (d / "ext.cnf").write_text(
        "subjectAltName=DNS:secure.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
    )
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "ext.cnf")  # fmt: skip
    yield {"ca": str(d / "ca.pem"), "cert": str(d / "leaf.pem"), "key": str(d / "leaf.key")}


def test_https_pinned_through_connect_proxy_keeps_sni_and_certificate_check(
    http_server: LocalHTTPServer,
    make_http_server: Callable[..., LocalHTTPServer],
    fake_dns: FakeDNS,
    tls_files: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    origin = make_http_server(tls=(tls_files["cert"], tls_files["key"]))
    tunnel = make_http_server()
    tunnel.tunnel_to = ("127.0.0.1", origin.port)
    monkeypatch.setenv("HTTPS_PROXY", tunnel.origin)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", tls_files["ca"])
    fake_dns.answers["secure.test"] = [[PUBLIC_IP], ["127.0.0.1"]]
    policy = FetchPolicy(allow_private_networks=False, allowed_domains=["secure.test"])
    assert get("https://secure.test/bytes/5000", policy=policy) == payload(5000)
    (connect,) = tunnel.wait_done()
    assert (connect.method, connect.target) == ("CONNECT", f"{PUBLIC_IP}:443")
    (seen,) = origin.wait_done()
    assert seen.path == "/bytes/5000" and seen.headers["host"] == "secure.test"

    # The certificate is checked against the name, not the pinned address.
    fake_dns.answers["other.test"] = [[PUBLIC_IP]]
    with pytest.raises(FetchError, match=r"\(http\): TLS error"):
        get("https://other.test/bytes/10", policy=FetchPolicy(allow_private_networks=False))


# ----- resources -----


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_no_sockets_leak(http_server: LocalHTTPServer) -> None:
    def burst() -> None:
        cases: list[tuple[str, FetchPolicy, Limits]] = [
            (http_server.url("/bytes/1000"), POLICY, LIMITS),
            (http_server.url("/status/404"), POLICY, LIMITS),
            (http_server.url("/redirect/2"), POLICY, LIMITS),
            (http_server.url(f"/stream/{BIG}"), POLICY, Limits(max_stream_bytes=1000)),
            (http_server.url(f"/bytes/{BIG}"), POLICY, Limits(max_stream_bytes=1000)),
            (http_server.url("/slow/100?interval=0.02"), FetchPolicy(timeout_s=0.1), LIMITS),
        ]
        for url, policy, limits in cases:
            try:
                get(url, policy=policy, limits=limits)
            except (FetchError, LimitError):
                pass
        http_server.wait_done()

    burst()  # warm up lazily created module state
    before = _open_fds()
    for _ in range(3):
        burst()
    deadline = time.monotonic() + 3
    while _open_fds() > before and time.monotonic() < deadline:
        time.sleep(0.02)  # the server's handler threads close their side
    assert _open_fds() <= before
