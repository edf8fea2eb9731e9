"""Listening sockets (app/listen.py): wildcard hosts are dual-stack, as nats-server's."""

from __future__ import annotations

import socket

import pytest

from jetstream_server.app.listen import bind_socket, join_host_port


@pytest.mark.skipif(not socket.has_dualstack_ipv6(), reason="no dual-stack IPv6 here")
@pytest.mark.parametrize("host", ["0.0.0.0", "::", ""])
def test_wildcard_hosts_bind_one_dual_stack_socket(host: str) -> None:
    # bound only, never listening: nothing is reachable from outside
    sock = bind_socket(host, 0)
    try:
        assert sock.family == socket.AF_INET6
        assert sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 0
    finally:
        sock.close()


@pytest.mark.parametrize(("host", "family"), [("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)])
def test_a_specific_address_binds_only_that(host: str, family: socket.AddressFamily) -> None:
    sock = bind_socket(host, 0)
    try:
        assert sock.family == family
        assert sock.getsockname()[0] == host
    finally:
        sock.close()


def test_join_host_port_brackets_ipv6() -> None:
    assert join_host_port("::1", 4222) == "[::1]:4222"
    assert join_host_port("[::1]", 4222) == "[::1]:4222"
    assert join_host_port("127.0.0.1", 4222) == "127.0.0.1:4222"
