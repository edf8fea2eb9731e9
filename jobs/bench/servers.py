"""Start the two servers the benchmark compares, each in its own process.

`running(kind, root)` yields a started `ServerProcess` of the bundled server
(`python -m jetstream_server`) or the real nats-server, with its store under `root`;
`sync_always=True` writes a nats-server config file with
``jetstream { sync_interval: always }`` (both servers read that form) so the
same switch reaches both; `speedups` sets the bundled server's `JETSTREAM_SPEEDUPS` (``off``:
asyncio's own loop even where the `speedups` extra is installed; None: this process's
environment decides, as for any server it starts). The process is stopped when the block ends, even on
error; when the server process died during the block, `ServerDied` carries its
exit code and last log lines. `rss_bytes(proc)` reads the resident set size of the server process
and `cpu_seconds(proc)` its CPU time (user + system, every thread), both from /proc (Linux).
`restarted(proc)` gives a new, not yet started process of the same server on the same store:
a restart that reuses the stopped `ServerProcess` could see the old process's output reader
mark it ready (it does so at end of output) and return before the new one listens.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from jetstream_server.app.speedups import SPEEDUPS_ENV
from jetstream_testing.process import ServerProcess, bundled_server_command, nats_server_binary

KINDS: tuple[str, ...] = ("bundled", "nats-server")
LABELS: dict[str, str] = {"bundled": "bundled", "nats-server": "nats-server"}


class ServerDied(RuntimeError):
    """The server process ended while a workload ran; the message holds its last log lines."""


def server_command(kind: str) -> list[str]:
    if kind == "bundled":
        return bundled_server_command()
    if kind == "nats-server":
        return [nats_server_binary()]
    raise ValueError(f"unknown server kind {kind!r} (expected one of {', '.join(KINDS)})")


@contextlib.contextmanager
def running(kind: str, root: Path, *, sync_always: bool = False, name: str = "",
            http_port: int | None = None, speedups: str | None = None) -> Iterator[ServerProcess]:
    """A started server of `kind` with its store under `root` (and a monitoring port with
    `http_port`, -1: a free one; the bundled server's loop by `speedups`), stopped on exit."""
    store = root / f"{kind}-{name or 'store'}"
    store.mkdir(parents=True, exist_ok=True)
    args: list[str] = []
    store_flag: Path | None = store
    if sync_always:
        conf = root / f"{kind}-{name or 'store'}.conf"
        conf.write_text(
            "jetstream {\n"
            f"  store_dir: {json.dumps(str(store))}\n"
            "  sync_interval: always\n"
            "}\n"
        )
        args = ["-c", str(conf)]
        store_flag = None  # nats-server refuses store_dir in both the file and -sd
    env = None if speedups is None else {**os.environ, SPEEDUPS_ENV: speedups}
    proc = ServerProcess(server_command(kind), args, store_dir=store_flag, startup_timeout=60.0,
                         http_port=http_port, env=env)
    proc.start()
    try:
        yield proc
    except Exception as exc:  # re-raised, with the server log when the server died
        if proc.proc is not None and proc.proc.poll() is not None:
            tail = "\n".join(proc.log[-20:])
            raise ServerDied(f"{kind} server exited with {proc.proc.returncode} during the workload: {exc}\n{tail}") from exc
        raise
    finally:
        proc.stop(timeout=60.0)


@contextlib.contextmanager
def restarted(proc: ServerProcess, *, startup_timeout: float = 60.0) -> Iterator[ServerProcess]:
    """A new `ServerProcess` of `proc`'s server, flags and store (the caller starts it, so
    that it can time the start); stopped when the block ends."""
    again = ServerProcess(proc.command, proc.extra_args, store_dir=proc.store_dir, host=proc.host,
                          env=proc.env, startup_timeout=startup_timeout)
    try:
        yield again
    finally:
        again.stop(timeout=300)


def rss_bytes(proc: ServerProcess) -> int:
    """Resident set size of the server process, in bytes (0 when unknown)."""
    if proc.proc is None:
        return 0
    try:
        text = Path(f"/proc/{proc.proc.pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(proc: ServerProcess) -> float:
    """User + system CPU seconds the server process has used (all its threads; 0.0 when unknown).

    Read from /proc/PID/stat (fields 14 and 15, in clock ticks: 10 ms at the usual 100 Hz),
    so a workload should keep the server busy for at least a second or so."""
    if proc.proc is None:
        return 0.0
    try:
        stat = Path(f"/proc/{proc.proc.pid}/stat").read_text()
    except OSError:
        return 0.0
    # the command name (field 2) is in parentheses and may hold spaces: split after it
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
