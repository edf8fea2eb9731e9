"""Running the `jetstream` CLI as a user does: a child process (`python -m jetstream_cli`)
against a server URL, with stdin answers when a test feeds them. Plus the normalisation
used to compare `--json` outputs between the bundled server and nats-server: times, ids
and the server's own version stamps are replaced by placeholders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from jetstream_testing.process import ServerProcess

TIME_KEYS = {"created", "ts", "first_ts", "last_ts", "last_active", "time", "mtime"}
# The server's version stamps: the key must be there, the value is the server's own.
VERSION_METADATA = {"_nats.ver", "_nats.level"}


def jetstream(server: ServerProcess | str | None, *args: str, input: str | None = None,
              env: dict[str, str] | None = None, timeout: float = 60,
              check: bool = True) -> subprocess.CompletedProcess[str]:
    """`jetstream -s URL ARGS...`; `check` asserts exit status 0 (showing stderr if not)."""
    argv = [sys.executable, "-m", "jetstream_cli"]
    if server is not None:
        argv += ["-s", server if isinstance(server, str) else server.url]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    full_env.update(env or {})
    result = subprocess.run(argv + list(args), input=input if input is not None else "",
                            capture_output=True, text=True, timeout=timeout, env=full_env)
    if check:
        assert result.returncode == 0, (
            f"jetstream {' '.join(args)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def jetstream_json(server: ServerProcess | str, *args: str) -> Any:
    return json.loads(jetstream(server, *args, "--json").stdout)


def normalize(value: Any) -> Any:
    """Times -> "<time>", version stamps -> "<version>", cluster leader name -> "<leader>"."""
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, item in value.items():
            if key in TIME_KEYS and isinstance(item, str):
                result[key] = "<time>"
            elif key in VERSION_METADATA:
                result[key] = "<version>"
            elif key == "leader" and isinstance(item, str):
                result[key] = "<leader>"
            else:
                result[key] = normalize(item)
        return result
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The `jetstream: error: ...` line of a failed run: exactly one, the last line on
    stderr (questions and log lines may come before it), and no traceback."""
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("jetstream: error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    return errors[0][len("jetstream: error: "):]
