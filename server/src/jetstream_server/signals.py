"""``--signal <command>[=<pid>]``: send a control signal to a running server, as nats-server's ``-sl``.

Commands and signals are nats-server's: ``ldm`` (SIGUSR2, lame duck mode),
``stop`` (SIGKILL), ``quit`` (SIGINT), ``term`` (SIGTERM), ``reopen``
(SIGUSR1), ``reload`` (SIGHUP). The pid is a number, a pid file's path (as
written by ``--pid``), or a prefix ending with ``*``; without one the single
running bundled server is found in ``/proc``. Errors carry nats-server's texts
(``invalid pid: x``, ``unknown signal "x"``, ``no jetstream-server processes
running``, ``multiple jetstream-server processes running: ...``).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Final

PROCESS_NAME: Final = "jetstream-server"
COMMANDS: Final = {
    "ldm": signal.SIGUSR2,
    "stop": signal.SIGKILL,
    "quit": signal.SIGINT,
    "term": signal.SIGTERM,
    "reopen": signal.SIGUSR1,
    "reload": signal.SIGHUP,
}
# how Go's os.Signal prints them, which is what nats-server logs ("Trapped %q signal")
GO_SIGNAL_NAMES: Final = {
    signal.SIGINT: "interrupt",
    signal.SIGTERM: "terminated",
    signal.SIGUSR1: "user defined signal 1",
    signal.SIGUSR2: "user defined signal 2",
    signal.SIGHUP: "hangup",
}


class SignalError(Exception):
    """The signal could not be sent; the text says why."""


def process_signal(spec: str) -> None:
    """Send the signal `spec` (``command[=pid]``) names; raises `SignalError`."""
    command, *rest = spec.split("=")
    if len(rest) > 1:
        raise SignalError(f"invalid signal parameters: {rest[1:]}")
    pid_expr = _maybe_read_pid_file(rest[0]) if rest else ""
    pid_text = pid_expr.removesuffix("*")
    is_glob = pid_expr.endswith("*")
    if pid_text and not pid_text.isdigit():
        raise SignalError(f"invalid pid: {pid_text}")
    pids = [int(pid_text)] if pid_text else []
    if not pid_text or is_glob:
        pids = [p for p in running_servers() if str(p).startswith(pid_text)]
        if len(pids) > 1 and not is_glob:
            listed = "".join(f"\n{p}" for p in pids)
            raise SignalError(f"multiple {PROCESS_NAME} processes running:{listed}")
    if not pids:
        raise SignalError(f"no {PROCESS_NAME} processes running")
    signum = COMMANDS.get(command)
    if signum is None:
        raise SignalError(f'unknown signal "{command}"')
    errors = ""
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError as exc:
            errors += f'\nsignal "{command}" {pid}: {exc.strerror}'
    if errors:
        raise SignalError(errors)


def _maybe_read_pid_file(text: str) -> str:
    try:
        return Path(text).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return text


def running_servers() -> list[int]:
    """Pids of the bundled servers running on this machine (this process excluded)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        pid = int(entry.name)
        if pid != os.getpid() and _is_server(argv):
            found.append(pid)
    return sorted(found)


def _is_server(argv: list[bytes]) -> bool:
    head = [a for a in argv[:3] if a]
    names = {os.path.basename(a) for a in head}
    if PROCESS_NAME.encode() in names:
        return b"--signal" not in argv and b"-sl" not in argv
    return b"-m" in head and b"jetstream_server" in argv and b"--signal" not in argv and b"-sl" not in argv
