"""Binding the listening socket and running uvicorn on it.

The socket is bound before uvicorn starts, so "port in use" or a bad address is a launch
error naming ``http_addr``, and the port of ``:0`` is known at once."""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Any

import uvicorn

from ..errors import LaunchError
from .config import ServerConfig
from .cores import affinity_available, allowed_cores
from .protocol import guarded_protocol

Cores = tuple[int, ...]


def parse_addr(http_addr: str | tuple[str, int]) -> tuple[str, int]:
    """``"host:port"``, ``"[v6]:port"`` or ``(host, port)``."""
    if isinstance(http_addr, tuple):
        host, port = http_addr
    else:
        text = str(http_addr).strip()
        if text.startswith("["):
            host, _, rest = text[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
        else:
            host, _, port_text = text.rpartition(":")
        if not host or not port_text.isdigit():
            raise LaunchError(f"http_addr must be 'host:port', got {http_addr!r}")
        port = int(port_text)
    if not isinstance(port, int) or not (0 <= port <= 65535):
        raise LaunchError(f"http_addr port must be 0..65535, got {port!r}")
    return str(host), port


def bind(host: str, port: int, what: str = "http_addr") -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port)."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise LaunchError(f"{what} {host}:{port}: the port is already in use") from None
        raise LaunchError(
            f"{what} {host}:{port}: cannot listen there ({e.strerror or e})"
        ) from None
    sock.set_inheritable(True)
    return sock


def uvicorn_server(
    app: Any,
    *,
    log_level: str,
    settings: ServerConfig,
    cls: type[uvicorn.Server] = uvicorn.Server,
) -> uvicorn.Server:
    """uvicorn with the server's connection guards: head timeout and size cap (our protocol
    class), keep-alive idle timeout and the graceful-stop bound."""
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        http=guarded_protocol(
            settings.header_timeout_s, settings.max_header_bytes, settings.shutdown_s
        ),
        timeout_graceful_shutdown=max(1, int(settings.shutdown_s + 0.999)),
        timeout_keep_alive=settings.keep_alive_s,  # type: ignore[arg-type]  # a float works
        server_header=False,
    )
    return cls(config)


def check_cores(
    launch: Cores | None, server: Cores | None, option: str
) -> tuple[Cores | None, Cores | None]:
    """Refuse core sets this machine cannot honour."""
    if launch is None and server is None:
        return None, None
    if not affinity_available():
        raise LaunchError(f"{option}: this platform has no CPU affinity API to pin threads")
    allowed = set(allowed_cores() or ())
    out: list[Cores | None] = []
    for name, cores in (("launch cores", launch), ("server cores", server)):
        if cores is None:
            out.append(None)
            continue
        cs = tuple(sorted(set(int(c) for c in cores)))
        if not cs:
            raise LaunchError(f"{option}: the {name} set is empty")
        outside = sorted(set(cs) - allowed)
        if outside:
            raise LaunchError(
                f"{option}: {name} {outside} are not allowed for this process "
                f"(allowed: {sorted(allowed)})"
            )
        out.append(cs)
    return out[0], out[1]


__all__ = ["bind", "check_cores", "parse_addr", "uvicorn_server"]
