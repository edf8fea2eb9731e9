"""The client listener's accept queue (both servers): the kernel's somaxconn, as Go's
net.Listen asks, not asyncio's default of 100 (issue 24: a burst of 2,000
connections took 9 s of SYN retries with 100, half a second on nats-server).

Read with `ss` (iproute2): for a listening socket its Send-Q column is the backlog.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from jetstream_server.app.listen import listen_backlog
from jetstream_testing.process import ServerProcess


def accept_queue(port: int) -> int:
    if shutil.which("ss") is None:
        pytest.fail("the ss command (iproute2) is needed to read a listener's backlog")
    out = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], check=True, capture_output=True, text=True
    ).stdout.split()
    # State Recv-Q Send-Q Local Peer
    assert out and out[0] == "LISTEN", out
    return int(out[2])


def test_client_listener_backlog_is_somaxconn(server: ServerProcess) -> None:
    assert accept_queue(server.port) == listen_backlog()
