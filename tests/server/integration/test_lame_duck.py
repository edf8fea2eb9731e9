"""Lame duck mode on both servers: ``--signal ldm=<pid>`` (SIGUSR2), the INFO with
``ldm``, no new clients, clients closed after the grace period, a clean exit.

The same config file for both: `lame_duck_duration` at nats-server's minimum
(30 s) and a one-second grace period, so the two clients are closed about one
and two seconds after the signal.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

import nats
import pytest
from server_kinds import SERVER_KINDS

from jetstream_testing.process import nats_server_binary, start_server, write_config

CONFIG = 'lame_duck_duration: "30s"\nlame_duck_grace_period: "1s"\n'


def _signal_command(kind: str, spec: str) -> list[str]:
    if kind == "bundled":
        return [sys.executable, "-m", "jetstream_server", "--signal", spec]
    return [nats_server_binary(), "--signal", spec]


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_lame_duck_tells_clients_then_closes_them_and_exits(kind: str, tmp_path: Path) -> None:
    conf = write_config(tmp_path / "ldm.conf", CONFIG)
    srv = start_server(kind, tmp_path / "js", config=conf)
    try:
        asyncio.run(_lame_duck_scenario(kind, srv.url, srv.proc.pid if srv.proc else 0))
        assert srv.proc is not None
        assert srv.proc.wait(15) == 0
        assert any("Entering lame duck mode" in line for line in srv.log)
    finally:
        srv.stop()


async def _lame_duck_scenario(kind: str, url: str, pid: int) -> None:
    loop = asyncio.get_running_loop()
    told: list[asyncio.Future[float]] = [loop.create_future() for _ in range(2)]
    closed: list[asyncio.Future[float]] = [loop.create_future() for _ in range(2)]
    clients = []
    for i in range(2):

        async def on_ldm(i: int = i) -> None:
            if not told[i].done():
                told[i].set_result(time.monotonic())

        async def on_closed(i: int = i) -> None:
            if not closed[i].done():
                closed[i].set_result(time.monotonic())

        clients.append(
            await nats.connect(
                url,
                allow_reconnect=False,
                lame_duck_mode_cb=on_ldm,
                closed_cb=on_closed,
                disconnected_cb=on_closed,
            )
        )
    js = clients[0].jetstream()
    await js.add_stream(name="LDM", subjects=["ldm.>"])
    ack = await js.publish("ldm.a", b"kept")
    assert ack.seq == 1

    sent = time.monotonic()
    result = subprocess.run(
        _signal_command(kind, f"ldm={pid}"), capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    await asyncio.wait_for(asyncio.gather(*told), 10)
    # no new client while in lame duck mode
    host, port = url.removeprefix("nats://").rsplit(":", 1)
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2).close()
    closed_at = await asyncio.wait_for(asyncio.gather(*closed), 15)
    # closed after the one-second grace period that began when the server got the signal
    # (after `sent`); a loaded machine only delays what the clients see, never advances it
    assert min(closed_at) - sent >= 0.9
    assert max(closed_at) - min(closed_at) <= 5  # together, not spread over the 30 s duration
    for nc in clients:
        await nc.close()


@pytest.mark.parametrize("kind", SERVER_KINDS)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('lame_duck_duration: "10s"\n', "invalid lame_duck_duration of 10s, minimum is 30 seconds"),
        ('lame_duck_grace_period: "-1s"\n', ""),
        (
            'lame_duck_duration: "30s"\nlame_duck_grace_period: "40s"\n',
            "lame duck grace period (40s) should be strictly lower than lame duck duration (30s)",
        ),
    ],
)
def test_lame_duck_config_errors(kind: str, text: str, message: str, tmp_path: Path) -> None:
    conf = write_config(tmp_path / "bad.conf", text)
    command = (
        [sys.executable, "-m", "jetstream_server"] if kind == "bundled" else [nats_server_binary()]
    )
    result = subprocess.run(
        [*command, "-a", "127.0.0.1", "-p", "-1", "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode != 0
    assert message in result.stderr + result.stdout


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_signal_errors(kind: str) -> None:
    result = subprocess.run(
        _signal_command(kind, "ldm=notapid"), capture_output=True, text=True, timeout=30
    )
    assert result.returncode != 0
    assert "invalid pid: notapid" in result.stderr + result.stdout
    result = subprocess.run(
        _signal_command(kind, "bogus=1"), capture_output=True, text=True, timeout=30
    )
    assert result.returncode != 0
    assert 'unknown signal "bogus"' in result.stderr + result.stdout

