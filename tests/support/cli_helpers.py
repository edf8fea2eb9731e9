"""Running the `jetstream` CLI as a user does: a child process (`python -m jetstream_cli`)
against a server URL, with stdin answers when a test feeds them (`jetstream_on_terminal`:
with stderr on a pseudo-terminal, as in a user's shell); long-running commands
(`sub`, `reply`, `kv watch`) are started with `start_cli`, whose output lines a test waits
for with a bound (a thread reads each pipe) instead of blocking on `readline`. Plus the
normalisation used to compare `--json` outputs between the bundled server and nats-server:
times, ids and the server's own version stamps are replaced by placeholders."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

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
    full_env = _cli_env()
    full_env.update(env or {})
    result = subprocess.run(argv + list(args), input=input if input is not None else "",
                            capture_output=True, text=True, timeout=timeout, env=full_env)
    if check:
        assert result.returncode == 0, (
            f"jetstream {' '.join(args)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


@dataclass
class TerminalRun:
    """A program run by `run_on_terminal`: its exit status, stdout (a pipe) and what its
    terminal showed (stderr; the terminal's CR LF line ends read as LF)."""

    returncode: int
    stdout: str
    terminal: str


def run_on_terminal(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
                    columns: int = 200, timeout: float = 60) -> TerminalRun:
    """`argv` (in `cwd`) with stderr on a pseudo-terminal `columns` wide (stdin empty, stdout
    a pipe), as in a user's shell; asserts exit status 0."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    shown: list[bytes] = []

    def pump() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=pump, daemon=True)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=slave, text=True, env=env, cwd=cwd)
    finally:
        os.close(slave)
    reader.start()
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        raise AssertionError(f"{' '.join(argv)} still running after {timeout}s") from None
    finally:
        reader.join(timeout)
        os.close(master)
    terminal = b"".join(shown).decode("utf-8", "replace").replace("\r\n", "\n")
    assert proc.returncode == 0, (
        f"{' '.join(argv)} exited {proc.returncode}\nstdout:\n{stdout}\nterminal:\n{terminal}")
    return TerminalRun(proc.returncode, stdout, terminal)


def jetstream_on_terminal(server: ServerProcess, *args: str, timeout: float = 60) -> TerminalRun:
    """`jetstream -s URL ARGS...` with stderr on a pseudo-terminal (`run_on_terminal`)."""
    return run_on_terminal([sys.executable, "-m", "jetstream_cli", "-s", server.url, *args],
                           env=_cli_env(), timeout=timeout)


def _cli_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}


class PipeLines:
    """The lines a child writes to one pipe, read by a thread as they come."""

    def __init__(self, pipe: IO[str]) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(pipe,), daemon=True).start()

    def _pump(self, pipe: IO[str]) -> None:
        for line in pipe:
            self._lines.put(line)
        self._lines.put(None)

    def next(self, timeout: float = 30) -> str | None:
        """The next line, or None once the pipe is closed; fails after `timeout` seconds."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout}s; so far: {''.join(self.seen)!r}") from None
        if line is None:
            self._lines.put(None)  # closed stays closed
        else:
            self.seen.append(line)
        return line

    def until(self, text: str, timeout: float = 30) -> str:
        """Lines up to the first that contains `text` (returned); fails after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.next(max(deadline - time.monotonic(), 0.0))
            if line is None:
                raise AssertionError(f"closed before {text!r}: {''.join(self.seen)!r}")
            if text in line:
                return line

    def rest(self, timeout: float = 30) -> str:
        """Everything written until the pipe closes (the lines already taken included)."""
        deadline = time.monotonic() + timeout
        while self.next(max(deadline - time.monotonic(), 0.0)) is not None:
            pass
        return "".join(self.seen)


@dataclass
class RunningCli:
    """A long-running `jetstream` command started by `start_cli`."""

    proc: subprocess.Popen[str]
    stdout: PipeLines
    stderr: PipeLines

    def finish(self, timeout: float = 30) -> str:
        """Waits (at most `timeout`) for it to exit 0 by itself; what it wrote to stdout."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"still running after {timeout}s: {''.join(self.stderr.seen)}") from None
        stdout = self.stdout.rest(timeout)
        assert code == 0, f"exited {code}\nstdout:\n{stdout}\nstderr:\n{self.stderr.rest(timeout)}"
        return stdout

    def interrupt(self, timeout: float = 20) -> int:
        """Ctrl-C (SIGINT), then its exit status (at most `timeout` later)."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"SIGINT did not stop it within {timeout}s") from None


def start_cli(server: ServerProcess, *args: str, ready: str, ready_on: str = "stderr",
              timeout: float = 30) -> RunningCli:
    """`jetstream -s URL ARGS...` in the background, returned once it has written a line
    containing `ready` (on stderr, or stdout with `ready_on="stdout"`). SIGINT acts as in a
    terminal even when this run ignores it (a background job): the CLI's own Ctrl-C handling
    is what a test interrupting it looks at."""
    proc = subprocess.Popen([sys.executable, "-m", "jetstream_cli", "-s", server.url, *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_cli_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None and proc.stderr is not None
    running = RunningCli(proc, PipeLines(proc.stdout), PipeLines(proc.stderr))
    try:
        (running.stderr if ready_on == "stderr" else running.stdout).until(ready, timeout)
    except AssertionError:
        proc.kill()
        proc.wait(10)
        raise
    return running


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
