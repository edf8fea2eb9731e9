"""Helpers the command modules share: click option types, server-time arithmetic, cluster
cells, JSON config files, natscli's choice of stream or consumer when none is named, and the
configuration diff `stream edit` and `consumer edit` show."""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
from nats.aio.msg import Msg

from ..errors import CliError
from ..jsapi import JsonDict
from ..prompts import ask_select
from ..render import Columns
from ..templates import TemplateError, expand
from ..units import parse_bytes, parse_duration, parse_time

REQUIRED_LEVEL_KEY = "_nats.req.level"
SERVER_VERSION_KEY = "_nats.ver"
SERVER_LEVEL_KEY = "_nats.level"


class DurationType(click.ParamType):
    """A natscli duration flag (`24h`, `1d`, `500ms`), converted to nanoseconds."""

    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class BytesType(click.ParamType):
    """A natscli size flag (`1024`, `10MB`); negative means unlimited (-1)."""

    name = "BYTES"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_bytes(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = DurationType()
BYTES = BytesType()

# A click decorator: takes the command function (or what the decorators below it made of it).
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def flag_pair(name: str, help_text: str) -> Decorator:
    """natscli's `--name/--no-name` flag: None when neither is given."""
    return click.option(f"--{name}/--no-{name}", name.replace("-", "_"), default=None,
                        help=help_text)


def all_of(decorators: Sequence[Decorator]) -> Decorator:
    """One decorator applying `decorators` in the order written (the first is outermost), as
    if each were written above the command."""
    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def parse_metadata(values: Sequence[str]) -> dict[str, str]:
    """`--metadata K=V` (repeatable) as natscli's string map."""
    result: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--metadata: expected KEY=VALUE, got {item!r}")
        result[key] = value
    return result


def server_now_ns(info: JsonDict) -> int:
    """The answer's `ts` (server time) in Unix nanoseconds, or the local clock."""
    ts = parse_time(info.get("ts"))
    return ts.unix_nanos() if ts is not None and not ts.is_zero else time.time_ns()


def since_ns(info: JsonDict, value: object) -> int:
    """natscli's `sinceRefOrNow(info.ts, value)`; "never" for a zero or absent time."""
    moment = parse_time(value)
    if moment is None:
        return 2**63 - 1
    return moment.since(server_now_ns(info))


def api_level(config: JsonDict) -> str:
    metadata = config.get("metadata") or {}
    return str(metadata.get(REQUIRED_LEVEL_KEY) or "0")


def _compact(names: list[str]) -> list[str]:
    """natscli's CompactStrings: drop the dotted suffix all host names share."""
    if len(names) < 2 or not all("." in n for n in names):
        return names
    parts = [n.split(".") for n in names]
    common = 0
    while all(len(p) > common + 1 for p in parts) and len({p[-1 - common] for p in parts}) == 1:
        common += 1
    return [".".join(p[: len(p) - common]) for p in parts] if common else names


def render_cluster(cluster: object) -> str:
    """The Replicas/Cluster cell: leader marked `*`, lagging or offline replicas `!`."""
    if not isinstance(cluster, dict):
        return ""
    peers: list[str] = []
    marks: list[str] = []
    if cluster.get("leader"):
        peers.append(str(cluster["leader"]))
        marks.append("*")
    for replica in cluster.get("replicas") or []:
        peers.append(str(replica.get("name", "")))
        marks.append("!" if replica.get("offline") or not replica.get("current") else "")
    return ", ".join(sorted(n + m for n, m in zip(_compact(peers), marks, strict=True)))


def load_json_file(path: str, what: str) -> JsonDict:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise CliError(f"could not read {what} file {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise CliError(f"invalid JSON in {what} file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise CliError(f"{what} file {path} must hold a JSON object")
    return data


def is_internal_stream(name: str) -> bool:
    """natscli hides KV, object store and MQTT streams unless `-a` is given."""
    return name.startswith(("KV_", "OBJ_", "$MQTT_"))


def choose(kind: str, name: str | None, known: list[str]) -> str:
    """natscli's selection when no name is given: ask which one (from stdin)."""
    if name:
        return name
    if not known:
        raise CliError(f"no {kind}s are defined")
    return ask_select(f"Select a {kind.capitalize()}", sorted(known))


def render_meta_api(cols: Columns, metadata: dict[str, str] | None) -> None:
    """natscli's RenderMetaApi: the server version and API levels kept in metadata."""
    meta = metadata or {}
    version, level = meta.get(SERVER_VERSION_KEY, ""), meta.get(SERVER_LEVEL_KEY, "")
    required = meta.get(REQUIRED_LEVEL_KEY, "")
    if version:
        cols.row("Host Version", version)
    if level or required:
        cols.row("Required API Level", f"{required or '0'} hosted at level {level}")


def ack_metadata(msg: Msg) -> tuple[int, int, int, int] | None:
    """(delivered, consumer seq, stream seq, pending) from a `$JS.ACK` reply subject."""
    tokens = (msg.reply or "").split(".")
    if len(tokens) < 9 or tokens[0] != "$JS" or tokens[1] != "ACK":
        return None
    if len(tokens) >= 12:
        tokens = tokens[:2] + tokens[4:]  # v2: $JS.ACK.<domain>.<account>.<stream>...
    try:
        return int(tokens[4]), int(tokens[6]), int(tokens[5]), int(tokens[8])
    except ValueError:
        return None


def parse_headers(values: Sequence[str], count: int) -> dict[str, str]:
    """natscli's `-H K:V` headers, values templated with the message number."""
    headers: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition(":")
        if not sep:
            raise CliError(f"invalid header {item!r}: use K:V")
        try:
            headers[key.strip()] = expand(value.strip(), count)
        except TemplateError as exc:
            raise CliError(f"failed to parse Header template for {key.strip()}: {exc}") from exc
    return headers


def config_diff(old: JsonDict, new: JsonDict) -> str:
    """A unified diff of two configurations (subject lists compared as sets)."""
    def normal(cfg: JsonDict) -> list[str]:
        copy = dict(cfg)
        if isinstance(copy.get("subjects"), list):
            copy["subjects"] = sorted(copy["subjects"])
        copy["metadata"] = {k: v for k, v in (copy.get("metadata") or {}).items()
                            if not k.startswith("_nats")} or None
        if copy["metadata"] is None:
            del copy["metadata"]
        return json.dumps(copy, indent=2, sort_keys=True).splitlines()

    lines = difflib.unified_diff(normal(old), normal(new), "old", "new", lineterm="", n=1)
    return "\n".join(list(lines)[2:])
