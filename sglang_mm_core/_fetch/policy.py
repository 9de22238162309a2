"""The fetch policy's rules about remote hosts: the timeout, `allowed_domains` and
`allow_private_networks`. Kept apart from the transport so each rule can say, in its refusal,
which spec field refused the source."""

from __future__ import annotations

import ipaddress
import math
import os
import socket
import threading
from collections.abc import Sequence

from .._spec import FetchPolicy
from ..errors import FetchError

DEFAULT_TIMEOUT_S = 3.0

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# NAT64's well-known prefix embeds an IPv4 address that a gateway connects to on our behalf.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def resolve_timeout(policy: FetchPolicy) -> float:
    """Whole-download budget in seconds: the spec's `fetch.timeout_s`, else `$REQUEST_TIMEOUT`,
    else 3 s. A malformed or non-positive environment value is ignored (operator setting)."""
    if policy.timeout_s is not None:
        return float(policy.timeout_s)
    raw = os.environ.get("REQUEST_TIMEOUT", "").strip()
    if raw:
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value > 0:
            return value
    return DEFAULT_TIMEOUT_S


def normalize_host(host: str) -> str:
    """Lower-case ASCII (IDNA) form without a trailing dot, so rules compare like for like."""
    host = host.strip().rstrip(".").lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return host
    return host


def domain_allowed(host: str, allowed: Sequence[str]) -> bool:
    """`allowed_domains` semantics: an entry names one host exactly; an entry written
    `*.example.com` or `.example.com` allows every subdomain of example.com (not the apex)."""
    name = normalize_host(host)
    for entry in allowed:
        rule = entry.strip().lower()
        if rule.startswith("*."):
            rule = rule[1:]
        if rule.startswith("."):
            suffix = "." + normalize_host(rule[1:])
            if name.endswith(suffix) and len(name) > len(suffix):
                return True
        elif name == normalize_host(rule):
            return True
    return False


def check_domain(host: str, policy: FetchPolicy) -> None:
    if policy.allowed_domains is not None and not domain_allowed(host, policy.allowed_domains):
        raise FetchError(
            f"host {host!r} refused by fetch policy allowed_domains (it is not in the list)"
        )


def address_class(ip: IPAddress) -> str | None:
    """Why `ip` is not a public unicast address ("loopback", "private", ...), or None."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return address_class(embedded)
        if ip.teredo is not None:
            return address_class(ip.teredo[1])
    for name, flag in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
    ):
        if flag:
            return name
    if not ip.is_global:
        return "non-public"
    return None


def resolve(host: str, port: int, timeout: float) -> list[IPAddress]:
    """All addresses `host` resolves to, in resolver order. `getaddrinfo` has no timeout of its
    own, so it runs on a helper thread that the caller stops waiting for at `timeout`."""
    try:
        return [ipaddress.ip_address(normalize_host(host))]
    except ValueError:
        pass
    outcome: list[object] = []

    def work() -> None:
        try:
            outcome.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as err:
            outcome.append(err)

    worker = threading.Thread(target=work, name="sglang-mm-resolve", daemon=True)
    worker.start()
    worker.join(max(timeout, 0.0))
    if not outcome:
        raise FetchError(f"resolving {host!r} timed out after {timeout:.3g} s")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise FetchError(f"cannot resolve host {host!r}: {result}")
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _canon, sockaddr in result:  # type: ignore[attr-defined]
        text = str(sockaddr[0]).split("%", 1)[0]  # drop an IPv6 zone id
        addr = ipaddress.ip_address(text)
        if addr not in addresses:
            addresses.append(addr)
    if not addresses:
        raise FetchError(f"cannot resolve host {host!r}: no addresses")
    return addresses


def checked_address(host: str, port: int, timeout: float) -> IPAddress:
    """The address to connect to under `allow_private_networks=false`: every address the host
    resolves to must be public (an attacker controls which one a later lookup would pick), and
    the caller then connects to the returned one, never resolving again."""
    addresses = resolve(host, port, timeout)
    for addr in addresses:
        why = address_class(addr)
        if why is not None:
            shown = host if normalize_host(host) == str(addr) else f"{host!r} ({addr})"
            raise FetchError(
                f"host {shown} is a {why} address, refused by fetch policy "
                "allow_private_networks=false"
            )
    return addresses[0]
