"""CPU seconds of the job's processes by role, read from /proc (Linux; no readings elsewhere).

The job's time goes to several processes at once (the embedded server is a
thread of the job's own process, the publisher a child, Spark a JVM with
Python workers below it), so wall-clock phases alone do not say who works.
`CpuMeter.mark(name)` reads the CPU time used since the previous mark, per role:

- `server`: the embedded server's thread (`jetstream-embedded`), when there is one;
- `driver`: the rest of this process (the job, py4j, the progress listener);
- `publisher`: this process's children that have ended and been waited for
  (the sample's publisher; `resource.RUSAGE_CHILDREN`);
- `Spark JVM`: a `java` process below this one (local Spark's driver and executor);
- `Spark Python`: every other process below it (Spark's Python workers, the
  data source runners).

Live processes are read at each mark; one that ends between two marks takes
with it what it used since the last mark (Spark's short-lived Python runners).
The readings are for a profile, never for a check.
"""

from __future__ import annotations

import os
import resource
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

PROC: Final = Path("/proc")
ROLES: Final = ("Spark JVM", "Spark Python", "server", "driver", "publisher")
SERVER_THREAD: Final = "jetstream-embedded"


def stat_cpu_seconds(stat_path: Path) -> float | None:
    """User + system CPU seconds from a /proc `stat` file (process or thread); None when gone."""
    try:
        stat = stat_path.read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after it
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        out.setdefault(parent, []).append(int(entry.name))
    return out


def _is_java(pid: int) -> bool:
    try:
        argv0 = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return False
    return os.path.basename(argv0) == b"java"


def _server_tid() -> int | None:
    return next((t.native_id for t in threading.enumerate() if t.name == SERVER_THREAD), None)


@dataclass(slots=True)
class CpuMeter:
    """Per-role CPU seconds between marks (see the module docstring)."""

    marks: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    _seen: dict[int, float] = field(default_factory=dict)  # descendant pid -> its last reading
    _own: dict[str, float] = field(default_factory=dict)  # server / driver / publisher totals at the last mark

    def __post_init__(self) -> None:
        self._read()  # the baseline: what ran before the meter started is not counted

    @staticmethod
    def available() -> bool:
        return (PROC / "self" / "stat").exists()

    def _own_totals(self) -> dict[str, float]:
        if not self.available():
            return {}
        me = stat_cpu_seconds(PROC / "self" / "stat") or 0.0
        tid = _server_tid()
        server = (stat_cpu_seconds(PROC / "self" / "task" / str(tid) / "stat") or 0.0) if tid is not None else 0.0
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"server": server, "driver": me - server, "publisher": reaped.ru_utime + reaped.ru_stime}

    def _read(self) -> dict[str, float]:
        """CPU seconds per role since the previous reading."""
        used = dict.fromkeys(ROLES, 0.0)
        own = self._own_totals()
        for own_role, total in own.items():
            used[own_role] += max(0.0, total - self._own.get(own_role, 0.0))
        self._own = own
        if not own:
            return used
        tree = _children()
        # (pid, role); None: not counted here (the publisher, reaped later), but Spark may be below it
        pending: list[tuple[int, str | None]] = [(os.getpid(), None)]
        while pending:
            pid, role = pending.pop()
            if role is not None:
                now = stat_cpu_seconds(PROC / str(pid) / "stat")
                if now is not None:
                    used[role] += max(0.0, now - self._seen.get(pid, 0.0))
                    self._seen[pid] = now
            for kid in tree.get(pid, []):
                kid_role = "Spark JVM" if _is_java(kid) else ("Spark Python" if role is not None else None)
                pending.append((kid, kid_role))
        return used

    def mark(self, name: str) -> None:
        self.marks.append((name, self._read()))

    def figures(self, events: dict[str, int]) -> list[tuple[str, str]]:
        """One row per mark: CPU seconds by role, and per event for the marks named in `events`."""
        rows = []
        for name, used in self.marks:
            total = sum(used.values())
            parts = ", ".join(f"{role} {used[role]:.1f}" for role in ROLES if used[role] >= 0.05)
            count = events.get(name, 0)
            per_event = f"; {total / count * 1e6:,.0f} us/event" if count else ""
            rows.append((f"CPU s: {name}", f"{total:.1f} = {parts or 'nothing measured'}{per_event}"))
        return rows
