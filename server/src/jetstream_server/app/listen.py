"""Listening sockets as nats-server opens them: a wildcard host listens on IPv6 too.

nats-server (Go) opens ``0.0.0.0`` (its default) and ``::`` as one dual-stack
socket, so clients reach it over IPv4 and IPv6 alike; a specific address
(``127.0.0.1``, ``::1``, a host name) listens on that address only.
`join_host_port` formats an address as Go's `net.JoinHostPort` does (IPv6 in
brackets), which is how the listening lines are logged and parsed.

`listen_backlog()` is the accept queue a listener asks for: the kernel's
maximum (``net.core.somaxconn``), as Go's `net.Listen` asks. asyncio's
`create_server(sock=...)` listens again with its own backlog (100 unless told),
so every listener passes this one to it: with 100, a burst of a few thousand
connections waits on the kernel's SYN retries for seconds.
"""

from __future__ import annotations

import socket
from typing import Final

WILDCARD_HOSTS: Final = frozenset({"0.0.0.0", "::", "[::]", ""})
SOMAXCONN_PATH: Final = "/proc/sys/net/core/somaxconn"
_MAX_BACKLOG: Final = (1 << 16) - 1  # the kernel's own cap (a u16 before Linux 4.1)


def listen_backlog() -> int:
    """The backlog Go's net.Listen uses: the kernel's somaxconn, else socket.SOMAXCONN."""
    try:
        with open(SOMAXCONN_PATH) as f:
            value = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return socket.SOMAXCONN
    return min(max(value, 1), _MAX_BACKLOG)


def bind_socket(host: str, port: int) -> socket.socket:
    """A bound (not yet listening) TCP socket for `host`:`port` (0: any free port)."""
    if host in WILDCARD_HOSTS and socket.has_dualstack_ipv6():
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            _reuse(sock)
            sock.bind(("::", port))
        except OSError:
            sock.close()
            raise
        return sock
    infos = socket.getaddrinfo(
        host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        _reuse(sock)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def _reuse(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)


def join_host_port(host: str, port: int) -> str:
    """``host:port``, IPv6 addresses in brackets (Go's net.JoinHostPort)."""
    host = host.strip("[]")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
