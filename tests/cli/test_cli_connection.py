"""The context flags and `NATS_URL`: where they may stand, authentication, TLS, and the one
line the CLI prints when it cannot connect."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import jetstream, jetstream_json, one_line_error

from jetstream_testing.process import ServerProcess, start_server


def test_nats_url_and_flag_positions(server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    by_env = jetstream(None, "stream", "ls", "-n", env={"NATS_URL": server.url})
    assert by_env.stdout == "ORDERS\n"
    after = jetstream(None, "stream", "ls", "-n", "-s", server.url,
                      env={"NATS_URL": "nats://127.0.0.1:1"})
    assert after.stdout == "ORDERS\n"
    assert jetstream(None, "--server", server.url, "stream", "ls", "-n").stdout == "ORDERS\n"
    aliases = jetstream(server, "s", "list", "-n").stdout
    assert aliases == "ORDERS\n"


def test_server_down_is_one_line_error() -> None:
    result = jetstream("nats://127.0.0.1:1", "stream", "ls", check=False)
    assert one_line_error(result).startswith("could not connect to nats://127.0.0.1:1: ")
    assert result.returncode == 1
    env = jetstream(None, "stream", "ls", env={"NATS_URL": "nats://127.0.0.1:1"}, check=False)
    assert one_line_error(env).startswith("could not connect to nats://127.0.0.1:1: ")


def test_bad_timeout_and_missing_files(server: ServerProcess) -> None:
    assert one_line_error(jetstream(server, "--timeout", "soon", "stream", "ls",
                                    check=False)).startswith("--timeout: invalid duration")
    assert one_line_error(jetstream(server, "--creds", "/nope.creds", "stream", "ls",
                                    check=False)) == "--creds: no such file '/nope.creds'"
    assert one_line_error(jetstream(server, "--tlsca", "/nope.pem", "stream", "ls",
                                    check=False)) == "--tlsca: no such file '/nope.pem'"


def test_user_and_password(server_kind: str, tmp_path: Path) -> None:
    proc = start_server(server_kind, tmp_path, args=["--user", "alice", "--pass", "s3cret"])
    try:
        denied = jetstream(proc, "stream", "ls", check=False)
        assert one_line_error(denied).startswith(f"could not connect to {proc.url}: ")
        assert "uthorization" in denied.stderr
        jetstream(proc, "--user", "alice", "--password", "s3cret", "stream", "add", "S",
                  "--subjects", "s", "--defaults")
        by_env = jetstream(proc, "stream", "ls", "-n",
                           env={"NATS_USER": "alice", "NATS_PASSWORD": "s3cret"})
        assert by_env.stdout == "S\n"
        wrong = jetstream(proc, "stream", "ls", "--user", "alice", "--password", "x", check=False)
        assert "uthorization" in one_line_error(wrong)
    finally:
        proc.stop()


def test_tls(server_kind: str, tmp_path: Path, certs: Path) -> None:
    proc = start_server(server_kind, tmp_path, args=[
        "--tls", "--tlscert", str(certs / "server.pem"), "--tlskey", str(certs / "server.key")])
    try:
        url = f"tls://127.0.0.1:{proc.port}"
        jetstream(url, "--tlsca", str(certs / "ca.pem"), "stream", "add", "S", "--subjects", "s",
                  "--defaults")
        assert jetstream_json(proc.url.replace("nats://", "tls://"), "stream", "ls", "--tlsca",
                              str(certs / "ca.pem")) == ["S"]
        listed = jetstream(url, "stream", "ls", "-n", env={"NATS_CA": str(certs / "ca.pem")})
        assert listed.stdout == "S\n"
        untrusted = jetstream(url, "stream", "ls", check=False)
        assert one_line_error(untrusted).startswith(f"could not connect to {url}: ")
    finally:
        proc.stop()
