"""The dashboard's data (``/dashboard/data.json``) from the bundled server's own state.

The shape is the one `jetstream dashboard` (jetstream_cli.dashboard) sends for any NATS
server, documented in docs/dashboard.md ("The data"): streams and consumers exactly as
`$JS.API.STREAM.INFO` and `$JS.API.CONSUMER.INFO` answer them, the account as
`$JS.API.INFO` answers it, the server as a subset of `/varz` (plus this server's
`event_loop`). Here they come from the same view functions the API uses, without a
round trip through the broker (and without counting as API requests).

Invariants:
- what a user sees is what the JetStream API would show that user: the streams of the
  identity's account only; a stream is listed when the user may publish to
  `$JS.API.STREAM.LIST` or to its `STREAM.INFO` subject, a consumer when the user may
  publish to `CONSUMER.LIST.<stream>` or to its `CONSUMER.INFO` subject; the others are
  counted (`hidden`), never shown;
- bounded time on the event loop: one page of at most `MAX_LIMIT` streams with at most
  `CONSUMERS_PER_STREAM` consumers each (a stream's own page in the detail view); what
  grows with the number of streams (the account's usage, sorting and permission checks
  of names) runs in slices of at most `SLICE_S`, giving the loop back in between
  (measured with 5,000 streams: docs/dashboard.md); a stream deleted meanwhile is
  skipped;
- server-wide figures go to users of the system account (or to everyone on a server
  without authentication); anyone else gets their account's share (`scope: account`),
  as nats-server's `$SYS.REQ.ACCOUNT.PING.STATZ` gives a non-system user.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final, Protocol
from urllib.parse import parse_qs

from jetstream_server.app.accounts import Account
from jetstream_server.app.loop_watchdog import LoopWatchdog
from jetstream_server.core.auth import GLOBAL_ACCOUNT, Identity
from jetstream_server.core.permissions import PermissionRules
from jetstream_server.core.routing import Broker
from jetstream_server.jetstream.api import views
from jetstream_server.jetstream.consumer.consumer import Consumer
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.subject_match import is_valid_subject
from jetstream_server.jetstream.versioning import SERVER_VERSION

SHAPE_VERSION: Final = 1
DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 100
CONSUMERS_PER_STREAM: Final = 10
MAX_PARAM_LEN: Final = 255
REFRESH_MS: Final = 3000
SLICE_S: Final = 0.005  # the longest the snapshot keeps the event loop before yielding
# The consumer metadata key the connector marks its durables with (spark_jetstream's
# read/durable.py OWNER_KEY; the server cannot import the connector, a test checks they agree).
CONNECTOR_OWNER_KEY: Final = "spark_jetstream.owner"


class DashboardQueryError(ValueError):
    """A data.json parameter that cannot be used; `str()` names it."""


@dataclass(frozen=True, slots=True)
class DashboardQuery:
    """What one refresh asks for: a page of streams (`offset`, `limit`, `subject` filter),
    or one stream (`stream`) with a page of its consumers."""

    offset: int = 0
    limit: int = DEFAULT_LIMIT
    subject: str = ""
    stream: str = ""

    @classmethod
    def from_query_string(cls, query: str) -> DashboardQuery:
        params = parse_qs(query, keep_blank_values=True)

        def text(key: str) -> str:
            value = params.get(key, [""])[-1]
            if len(value) > MAX_PARAM_LEN:
                raise DashboardQueryError(f"{key}: longer than {MAX_PARAM_LEN} characters")
            return value

        def number(key: str, default: int, low: int, high: int) -> int:
            raw = text(key)
            if raw == "":
                return default
            try:
                value = int(raw)
            except ValueError:
                raise DashboardQueryError(f"{key}: not a number: {raw!r}") from None
            if not low <= value <= high:
                raise DashboardQueryError(f"{key}: {value} is not between {low} and {high}")
            return value

        subject = text("subject")
        if subject and not is_valid_subject(subject):
            raise DashboardQueryError(f"subject: not a valid subject filter: {subject!r}")
        return cls(
            offset=number("offset", 0, 0, 1 << 62),
            limit=number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
            subject=subject,
            stream=text("stream"),
        )


class ServerState(Protocol):
    """What the snapshot reads of the running server (`NatsServer`)."""

    server_id: str
    server_name: str
    start_time: float
    accounts: dict[str, Account]
    account_brokers: dict[str, Broker]
    watchdog: LoopWatchdog
    slow_consumers: int

    @property
    def connections(self) -> Mapping[int, Any]: ...

    @property
    def in_msgs(self) -> int: ...

    @property
    def out_msgs(self) -> int: ...

    @property
    def in_bytes(self) -> int: ...

    @property
    def out_bytes(self) -> int: ...


class _Access:
    """The identity's publish permissions on API subjects (all allowed when unrestricted)."""

    def __init__(self, identity: Identity | None) -> None:
        perms = identity.permissions if identity is not None else None
        rules = PermissionRules.of(perms) if perms is not None else None
        self._rules = rules if rules is not None and rules.restricts_publish else None

    @property
    def unrestricted(self) -> bool:
        return self._rules is None

    def may(self, api_subject: str) -> bool:
        return self._rules is None or self._rules.publish_allowed("$JS.API." + api_subject)


class _Slices:
    """Gives the event loop back once a slice of `SLICE_S` is used up."""

    def __init__(self) -> None:
        self._since = time.perf_counter()

    async def tick(self) -> None:
        if time.perf_counter() - self._since >= SLICE_S:
            await asyncio.sleep(0)
            self._since = time.perf_counter()


async def build_snapshot(
    server: ServerState, identity: Identity | None, query: DashboardQuery, *, system: bool
) -> dict[str, Any]:
    """One refresh's data for `identity` (None: a server without authentication);
    `system`: the identity belongs to the system account (or there is no authentication)."""
    started = time.perf_counter()
    slices = _Slices()
    now = time.time()
    account_name = identity.account if identity is not None else GLOBAL_ACCOUNT
    account = server.accounts.get(account_name)
    access = _Access(identity)
    notes: list[str] = []
    errors: list[str] = []
    out: dict[str, Any] = {
        "dashboard": SHAPE_VERSION,
        "source": "jetstream-server",
        "now": _rfc3339(now),
        "now_ms": int(now * 1000),
        "refresh_ms": REFRESH_MS,
        "identity": None if identity is None else {"user": identity.user, "account": account_name},
        "server": _server_figures(server, None if system else account_name),
        "account": None,
        "streams": {"total": 0, "offset": query.offset, "limit": query.limit,
                    "subject": query.subject, "hidden": 0, "items": []},
        "detail": query.stream or None,
        "notes": notes,
        "errors": errors,
    }
    engine = account.jetstream if account is not None else None
    if engine is None:
        notes.append(f"JetStream is not enabled for account {account_name}.")
    else:
        if access.may("INFO"):
            out["account"] = await _account_info(engine, slices)
        else:
            notes.append("This user may not read the JetStream account information ($JS.API.INFO).")
        if query.stream:
            out["streams"] = _one_stream(engine, access, query, errors)
        else:
            out["streams"] = await _stream_page(engine, access, query, slices)
    out["cost"] = {"api_requests": 0, "took_ms": round((time.perf_counter() - started) * 1000, 3)}
    return out


def _server_figures(server: ServerState, account: str | None) -> dict[str, Any]:
    """`/varz`'s counters, server-wide (`account` None) or of one account's connections."""
    figures: dict[str, Any] = {
        "name": server.server_name,
        "id": server.server_id,
        "version": SERVER_VERSION,
        "start": _rfc3339(server.start_time),
        "event_loop": server.watchdog.varz(),
    }
    if account is None:
        brokers = server.account_brokers.values()
        figures.update(
            scope="server",
            connections=len(server.connections),
            subscriptions=sum(b.num_subscriptions for b in brokers),
            in_msgs=server.in_msgs, out_msgs=server.out_msgs,
            in_bytes=server.in_bytes, out_bytes=server.out_bytes,
            slow_consumers=server.slow_consumers,
        )
        return figures
    mine = [c for c in server.connections.values() if _account_of(c) == account]
    broker = server.account_brokers.get(account)
    totals = [0, 0, 0, 0]
    for conn in mine:
        session = conn.session
        totals[0] += session.in_msgs
        totals[1] += session.out_msgs
        totals[2] += session.in_bytes
        totals[3] += session.out_bytes
    figures.update(
        scope="account", account=account, connections=len(mine),
        subscriptions=broker.num_subscriptions if broker is not None else 0,
        in_msgs=totals[0], out_msgs=totals[1], in_bytes=totals[2], out_bytes=totals[3],
    )
    return figures


def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds")[:-6] + "Z"


def _account_of(conn: Any) -> str:
    identity = conn.session.identity
    return identity.account if identity is not None else GLOBAL_ACCOUNT


async def _account_info(engine: JetStream, slices: _Slices) -> dict[str, Any]:
    """`$JS.API.INFO`'s answer (`JetStream.account_info`), summed in slices: with
    thousands of streams one pass takes tens of milliseconds."""
    used = {"memory": 0, "file": 0}
    reserved = {"memory": 0, "file": 0}
    streams = consumers = 0
    for stream in list(engine.streams.values()):
        if stream.closed:
            continue
        config = stream.config
        used[config.storage] = used.get(config.storage, 0) + stream.store.stored_bytes()
        if config.max_bytes > 0:
            reserved[config.storage] = reserved.get(config.storage, 0) + config.max_bytes
        streams += 1
        consumers += len(stream.consumers)
        await slices.tick()
    info: dict[str, Any] = {
        "memory": used["memory"],
        "storage": used["file"],
        "reserved_memory": reserved["memory"],
        "reserved_storage": reserved["file"],
        "streams": streams,
        "consumers": consumers,
        "limits": engine.store_limits.account.to_json(),
    }
    if engine.settings.domain:
        info["domain"] = engine.settings.domain
    info["api"] = {"total": engine.api_stats.total, "errors": engine.api_stats.errors}
    return info


async def _stream_page(
    engine: JetStream, access: _Access, query: DashboardQuery, slices: _Slices
) -> dict[str, Any]:
    names: list[str] = []
    for candidate in list(engine.streams.values()):
        if not query.subject or views.stream_matches_subject(candidate, query.subject):
            names.append(candidate.name)
        await slices.tick()
    names.sort()
    await slices.tick()
    if access.may("STREAM.LIST"):
        visible = names
    else:
        visible = []
        for name in names:
            if access.may(f"STREAM.INFO.{name}"):
                visible.append(name)
            await slices.tick()
    # a stream deleted while the loop was given back is left out
    shown = (engine.streams.get(name) for name in visible[query.offset: query.offset + query.limit])
    page = [s for s in shown if s is not None and not s.closed]
    now_ns = engine.clock.now_ns()
    return {
        "total": len(visible),
        "offset": query.offset,
        "limit": query.limit,
        "subject": query.subject,
        "hidden": len(names) - len(visible),
        "items": [
            _with_consumers(s, now_ns, access, 0, CONSUMERS_PER_STREAM, connector_first=True)
            for s in page
        ],
    }


def _one_stream(
    engine: JetStream, access: _Access, query: DashboardQuery, errors: list[str]
) -> dict[str, Any]:
    stream = engine.streams.get(query.stream)
    page: dict[str, Any] = {"total": 0, "offset": 0, "limit": 1, "subject": "", "hidden": 0,
                            "items": []}
    if stream is None:
        errors.append(f"stream {query.stream} not found")
    elif not (access.may("STREAM.LIST") or access.may(f"STREAM.INFO.{stream.name}")):
        page["hidden"] = 1
    else:
        page["total"] = 1
        page["items"] = [
            _with_consumers(stream, engine.clock.now_ns(), access, query.offset, query.limit,
                            connector_first=False)
        ]
    return page


def _with_consumers(
    stream: Stream, now_ns: int, access: _Access, offset: int, limit: int, *,
    connector_first: bool,
) -> dict[str, Any]:
    """Stream info with a page of its consumers; in the overview (`connector_first`) the
    connector's durables come first (the question asked most: is my query keeping up?),
    in a stream's own view they come in name order, as `CONSUMER.LIST` pages them."""
    info = views.stream_info(stream, now_ns)
    consumers = {n: c for n, c in stream.consumers.items() if isinstance(c, Consumer)}
    listed = access.may(f"CONSUMER.LIST.{stream.name}")
    names = sorted(
        n for n in consumers if listed or access.may(f"CONSUMER.INFO.{stream.name}.{n}")
    )
    if connector_first:
        names.sort(key=lambda n: CONNECTOR_OWNER_KEY not in dict(consumers[n].config.metadata))
    info["consumers"] = {
        "total": len(names),
        "offset": offset,
        "limit": limit,
        "hidden": len(consumers) - len(names),
        "items": [consumers[n].info() for n in names[offset: offset + limit]],
    }
    return info
