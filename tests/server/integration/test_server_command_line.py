"""The server's command line, `python -m jetstream_server` / `jetstream-server` (not the
`jetstream` CLI, tested in tests/cli): flags, random port, log lines, config
files, errors and clean shutdown on signals. Real child processes."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import nats
import pytest

from jetstream_server.__main__ import config_from_args
from jetstream_server.config import ConfigError
from jetstream_testing.process import ServerProcess, bundled_server_command


def _bundled(tmp_path: Path, *args: str, port: int = -1) -> ServerProcess:
    return ServerProcess(bundled_server_command(), args, store_dir=tmp_path, port=port).start()


def _info(port: int) -> dict[str, object]:
    with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
        line = sock.recv(4096).split(b"\r\n", 1)[0]
    assert line.startswith(b"INFO ")
    return json.loads(line[5:])  # type: ignore[no-any-return]


def test_random_port_log_lines_and_sigterm(tmp_path: Path) -> None:
    proc = _bundled(tmp_path, "-n", "cli-test")
    try:
        assert proc.port > 0
        log = "\n".join(proc.log)
        assert f"Listening for client connections on 127.0.0.1:{proc.port}" in log
        assert "Server is ready" in log
        assert "[INF]" in log
        info = _info(proc.port)
        assert info["server_name"] == "cli-test"
        assert info["port"] == proc.port
        assert info["jetstream"] is True and info["headers"] is True
    finally:
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.proc.wait(10) == 0
        proc.stop()


def test_sigint_exits_zero(tmp_path: Path) -> None:
    proc = _bundled(tmp_path)
    assert proc.proc is not None
    proc.proc.send_signal(signal.SIGINT)
    assert proc.proc.wait(10) == 0
    proc.stop()


def test_monitor_log_line(tmp_path: Path) -> None:
    proc = ServerProcess(bundled_server_command(), store_dir=tmp_path, http_port=-1).start()
    try:
        assert proc.monitor_port
        assert any("Starting http monitor on" in line for line in proc.log)
    finally:
        proc.stop()


async def test_config_file_and_flag_override(tmp_path: Path) -> None:
    conf = tmp_path / "server.conf"
    conf.write_text(
        "port: 1\nmax_payload: 2KB\nauthorization {\n  token: from-file\n}\nserver_name: fromfile\n"
    )
    # -p -1 on the command line overrides `port: 1` from the file
    proc = _bundled(tmp_path, "-c", str(conf))
    try:
        info = _info(proc.port)
        assert info["max_payload"] == 2048
        assert info["auth_required"] is True
        assert info["server_name"] == "fromfile"
        nc = await nats.connect(proc.url, token="from-file", max_reconnect_attempts=0)
        try:
            sub = await nc.subscribe("cfg")
            await nc.publish("cfg", b"x" * 2048)
            assert len((await sub.next_msg(2)).data) == 2048
        finally:
            await nc.close()
    finally:
        proc.stop()


def test_trace_logs_protocol(tmp_path: Path) -> None:
    proc = _bundled(tmp_path, "-DV")
    try:
        with socket.create_connection(("127.0.0.1", proc.port), timeout=3) as sock:
            sock.recv(4096)
            sock.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
            assert sock.recv(4096) == b"PONG\r\n"
        proc.wait_for_log(r"\[TRC\].*Ping", timeout=5)
    finally:
        proc.stop()


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jetstream_server", *args], capture_output=True, text=True, timeout=20
    )


def test_bad_config_file_exits_1_naming_line(tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text("port: 4222\nmax_paylod: 1MB\n")
    result = _run_cli("-c", str(conf))
    assert result.returncode == 1
    assert f"{conf}:2: unknown configuration key 'max_paylod'" in result.stderr


def test_missing_config_file_exits_1(tmp_path: Path) -> None:
    result = _run_cli("-c", str(tmp_path / "nope.conf"))
    assert result.returncode == 1
    assert "cannot read config file" in result.stderr


def test_bad_flag_exits_1() -> None:
    result = _run_cli("--no-such-flag")
    assert result.returncode == 1
    assert "--no-such-flag" in result.stderr


def test_port_in_use_exits_1(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = _run_cli("-a", "127.0.0.1", "-p", str(port))
    assert result.returncode == 1
    assert "[ERR]" in result.stderr


@pytest.mark.parametrize("program", ["bundled", "nats-server"])
def test_monitor_port_in_use_says_so_like_nats_server(program: str) -> None:
    """Both servers name the monitoring port (not the client port) and exit 1."""
    command = [sys.executable, "-m", "jetstream_server"] if program == "bundled" else [
        str(Path(sys.executable).parent / "nats-server")]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = subprocess.run([*command, "-a", "127.0.0.1", "-p", "-1", "-m", str(port)],
                                capture_output=True, text=True, timeout=20)
    assert result.returncode == 1
    assert (f"Can't start monitoring: can't listen to the monitor port: listen tcp 127.0.0.1:{port}: "
            "bind: address already in use") in result.stderr


def test_flags_parse_like_nats_server() -> None:
    c = config_from_args(
        ["-a", "127.0.0.1", "-p", "-1", "-m", "8222", "-js", "-sd", "/tmp/js", "-n", "x",
         "--user", "u", "--pass", "p", "-D"]
    )
    assert (c.host, c.port, c.http_port, c.server_name) == ("127.0.0.1", -1, 8222, "x")
    assert c.jetstream.store_dir == "/tmp/js"
    assert (c.auth.user, c.auth.password) == ("u", "p")
    assert c.debug and not c.trace
    c = config_from_args(["--auth", "tok", "-V", "--tls", "--tlscert", "c", "--tlskey", "k",
                          "--tlscacert", "ca", "--tlsverify"])
    assert c.auth.token == "tok" and c.trace
    assert (c.tls.enabled, c.tls.cert_file, c.tls.key_file, c.tls.ca_file, c.tls.verify) == (
        True, "c", "k", "ca", True,
    )
    assert config_from_args(["-DV"]).debug and config_from_args(["-DV"]).trace


@pytest.mark.parametrize(
    "argv",
    [["--user", "u"], ["--tls"], ["-p", "70000"]],
)
def test_flag_errors(argv: list[str]) -> None:
    with pytest.raises(ConfigError):
        config_from_args(argv)


def test_console_script_installed() -> None:
    script = Path(sys.executable).parent / "jetstream-server"
    assert script.exists()
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=20)
    assert result.returncode == 0
    assert "--store_dir" in result.stdout
