"""A check's result as natscli's `server check` renders it: OK / warning / critical messages
and performance data, as a Nagios line (`OK Connection OK:connected to ... |
connect_time=0.0012s;0.5000;1.0000 ...`), JSON or text tables, and the Nagios exit status
(0 OK, 1 warning, 2 critical, 3 unknown)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from ...jsapi import JsonDict
from ...render import Table


@dataclass
class PerfData:
    name: str
    value: float
    unit: str = ""
    warn: float = 0.0
    crit: float = 0.0
    help: str = ""

    def __str__(self) -> str:
        fmt = "{:.4f}" if self.unit == "s" else "{:.0f}"
        name = f"'{self.name}'" if " " in self.name or "\t" in self.name else self.name
        text = f"{name}={fmt.format(self.value)}{self.unit}"
        if self.warn or self.crit:
            text += f";{fmt.format(self.warn)}" if self.warn else ";"
            if self.crit:
                text += f";{fmt.format(self.crit)}"
        return text


@dataclass
class CheckResult:
    name: str
    check: str
    oks: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    criticals: list[str] = field(default_factory=list)
    perf: list[PerfData] = field(default_factory=list)

    def timing(self, name: str, seconds: float, warn: float, crit: float, help: str,
               exceeded: Callable[[float], str], ok: str) -> None:
        """A timing and its thresholds (0: none): its performance data, and the message
        `exceeded(threshold)` as critical or warning when it reaches `crit` or `warn`, else
        `ok`."""
        self.perf.append(PerfData(name, seconds, "s", warn, crit, help))
        if crit and seconds >= crit:
            self.criticals.append(exceeded(crit))
        elif warn and seconds >= warn:
            self.warnings.append(exceeded(warn))
        else:
            self.oks.append(ok)

    @property
    def status(self) -> str:
        if self.criticals:
            return "CRITICAL"
        if self.warnings:
            return "WARNING"
        return "OK"

    @property
    def code(self) -> int:
        return {"OK": 0, "WARNING": 1, "CRITICAL": 2}.get(self.status, 3)

    def nagios(self) -> str:
        parts = [self.name] + [f"Crit:{c}" for c in self.criticals]
        parts += [f"Warn:{w}" for w in self.warnings] + [f"OK:{o}" for o in self.oks]
        text = f"{self.status} {' '.join(parts)}"
        if self.perf:
            text += " | " + " ".join(str(p) for p in self.perf)
        return text

    def as_json(self) -> str:
        data: JsonDict = {"status": self.status, "check_suite": self.check,
                          "check_name": self.name}
        for key, values in (("warning", self.warnings), ("critical", self.criticals),
                            ("ok", self.oks)):
            if values:
                data[key] = values
        data["perf_data"] = [{"name": p.name, "value": p.value, "warning": p.warn,
                              "critical": p.crit, "unit": p.unit, "help": p.help}
                             for p in self.perf]
        return json.dumps(data, indent=2)

    def text(self) -> str:
        lines = [f"{self.name}: {self.status}", ""]
        detail = Table("", ["Status", "Message"])
        for kind, messages in (("OK", self.oks), ("Warning", self.warnings),
                               ("Critical", self.criticals)):
            for message in messages:
                detail.add_row(kind, message)
        if detail.rows:
            lines += ["Status Detail", "", detail.render(), ""]
        metrics = Table("", ["Metric", "Value", "Unit", "Critical Threshold",
                             "Warning Threshold", "Description"])
        for p in self.perf:
            metrics.add_row(p.name, f"{p.value:g}", p.unit, f"{p.crit:g}", f"{p.warn:g}", p.help)
        if metrics.rows:
            lines += ["", "Check Metrics", "", metrics.render()]
        return "\n".join(lines)
