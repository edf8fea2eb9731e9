"""What the monitoring endpoints say: `/varz`, `/connz`, `/jsz`, `/accountz`, `/healthz`.

`Monitoring` builds nats-server's JSON bodies from the running server (a
`MonitoredServer`: the `NatsServer`), each when asked: server-wide counters
and limits (`varz`), the client connections (`connz`, with
``?auth=1`` the authenticated user and account), JetStream usage over the
accounts that have it (`jsz`, ``?accounts=true`` per account), the accounts
(`accountz`, ``?acc=NAME`` one account's detail). `routes` is the table of
paths the HTTP listener (`app.monitor_http`) serves; a page added there is one
entry more. Times are RFC 3339 with nine fraction digits, durations as
nats-server's uptime (``1d2h3m4s``). Nothing here touches a socket.
"""

from __future__ import annotations

import os
import platform
import ssl
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from jetstream_server.app.accounts import Account
from jetstream_server.app.connection import ClientConnection
from jetstream_server.app.loop_watchdog import LoopWatchdog
from jetstream_server.app.monitor_http import Query, Response, RouteHandler
from jetstream_server.config import JetStreamLimits, ServerConfig
from jetstream_server.core.auth import GLOBAL_ACCOUNT, Identity
from jetstream_server.core.gotime import NS_PER_SECOND, rfc3339_ns
from jetstream_server.core.router import JszReporter, Service
from jetstream_server.core.routing import Broker
from jetstream_server.jetstream.engine import JetStream


class MonitoredServer(Protocol):
    """What the endpoints read of the server (`NatsServer`)."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def server_id(self) -> str: ...

    @property
    def start_time(self) -> float: ...

    @property
    def http_host(self) -> str: ...

    @property
    def http_port(self) -> int | None: ...

    @property
    def tls_context(self) -> ssl.SSLContext | None: ...

    @property
    def connections(self) -> Mapping[int, ClientConnection]: ...

    @property
    def total_connections(self) -> int: ...

    @property
    def slow_consumers(self) -> int: ...

    @property
    def accounts(self) -> Mapping[str, Account]: ...

    @property
    def account_brokers(self) -> Mapping[str, Broker]: ...

    @property
    def broker(self) -> Broker: ...

    @property
    def services(self) -> Sequence[Service]: ...

    @property
    def watchdog(self) -> LoopWatchdog: ...

    def info_for(self, conn: ClientConnection | None) -> dict[str, Any]: ...

    def traffic_totals(self) -> tuple[int, int, int, int]:
        """(in_msgs, in_bytes, out_msgs, out_bytes) of every connection so far."""
        ...


# nats-server's JetStreamStats: what /varz shows of /jsz
_JETSTREAM_STATS = (
    "memory", "storage", "reserved_memory", "reserved_storage", "accounts", "ha_assets", "api",
)


def _flag(query: Query, name: str) -> bool:
    """A boolean query parameter as nats-server reads one (``1``, ``true``, ``t``)."""
    return query.get(name, ["false"])[-1].lower() in ("1", "true", "t")


class Monitoring:
    """The monitoring payloads of one server."""

    def __init__(self, server: MonitoredServer) -> None:
        self.server = server

    def routes(self) -> dict[str, RouteHandler]:
        """Path -> handler, in the order ``/`` lists them."""
        return {
            "/varz": lambda query: Response(200, self.varz()),
            "/connz": lambda query: Response(200, self.connz(auth=_flag(query, "auth"))),
            "/healthz": lambda query: Response(200, {"status": "ok"}),
            "/jsz": lambda query: Response(200, self.jsz(accounts=_flag(query, "accounts"))),
            "/accountz": self._accountz_route,
        }

    def _accountz_route(self, query: Query) -> Response:
        name = query.get("acc", [""])[-1]
        detail = self.accountz(name)
        if detail is None:
            return Response(400, f"Account {name} does not exist")  # nats-server's plain text
        return Response(200, detail)

    def varz(self) -> dict[str, Any]:
        server = self.server
        cfg = server.config
        now = time.time()
        info = server.info_for(None)
        js = self.jsz()
        totals = server.traffic_totals()
        varz: dict[str, Any] = {
            **info,
            "now": _rfc3339(now),
            "start": _rfc3339(server.start_time),
            "uptime": _uptime(now - server.start_time),
            "mem": _rss_bytes(),
            "cores": os.cpu_count() or 1,
            "cpu": _cpu_percent(now - server.start_time),
            "connections": len(server.connections),
            "total_connections": server.total_connections,
            "routes": 0,
            "remotes": 0,
            "leafnodes": 0,
            "in_msgs": totals[0],
            "out_msgs": totals[2],
            "in_bytes": totals[1],
            "out_bytes": totals[3],
            "slow_consumers": server.slow_consumers,
            "event_loop": server.watchdog.varz(),  # bundled server only: its loop's lag
            "subscriptions": sum(b.num_subscriptions for b in server.account_brokers.values())
            or server.broker.num_subscriptions,
            "http_host": server.http_host,
            "http_port": server.http_port or 0,
            "max_connections": cfg.max_connections,
            **({"max_subscriptions": cfg.max_subscriptions} if cfg.max_subscriptions else {}),
            "max_control_line": cfg.max_control_line,
            "max_pending": cfg.max_pending,
            "ping_interval": int(cfg.ping_interval_s * 1e9),
            "ping_max": cfg.max_pings_out,
            "write_deadline": int(cfg.write_deadline_s * 1e9),
            "auth_timeout": cfg.auth_timeout_s,
            "tls_timeout": 2,
            "jetstream": {} if not cfg.jetstream.enabled else {
                "config": {
                    "max_memory": cfg.jetstream.max_memory_store,
                    "max_storage": cfg.jetstream.max_file_store,
                    "store_dir": cfg.jetstream.store_dir or "",
                    "sync_interval": int(cfg.jetstream.sync_interval_s * 1e9),
                    "sync_always": cfg.jetstream.sync_always,
                    **({"domain": cfg.jetstream.domain} if cfg.jetstream.domain else {}),
                },
                "limits": _limits(cfg.jetstream.limits),
                **({"stats": {k: js[k] for k in _JETSTREAM_STATS}} if "disabled" not in js else {}),
            },
            "system": platform.system().lower(),
            **({"system_account": system} if (system := self._system_account()) else {}),
        }
        return varz

    def connz(self, auth: bool = False) -> dict[str, Any]:
        """`auth`: show each connection's ``authorized_user`` (and a
        non-global ``account``), as nats-server's ``/connz?auth=1``."""
        server = self.server
        now = time.time()
        conns = []
        for conn in sorted(server.connections.values(), key=lambda c: c.cid):
            session = conn.session
            conns.append(
                {
                    "cid": conn.cid,
                    "kind": "Client",
                    "type": "websocket" if conn.websocket else "nats",
                    "ip": conn.ip,
                    "port": conn.port,
                    "start": _rfc3339(conn.start),
                    "last_activity": _rfc3339(conn.last_activity),
                    "uptime": _uptime(now - conn.start),
                    "idle": _uptime(now - conn.last_activity),
                    "pending_bytes": conn.pending_bytes,
                    "in_msgs": session.in_msgs,
                    "out_msgs": session.out_msgs,
                    "in_bytes": session.in_bytes,
                    "out_bytes": session.out_bytes,
                    "subscriptions": len(session.subs),
                    "name": session.name,
                    "lang": session.lang,
                    "version": session.version,
                    **(_auth_fields(session.identity) if auth else {}),
                    **({"tls_version": "1.3"} if server.tls_context is not None else {}),
                }
            )
        return {
            "server_id": server.server_id,
            "now": _rfc3339(now),
            "num_connections": len(conns),
            "total": len(conns),
            "offset": 0,
            "limit": 1024,
            "connections": conns,
        }

    def jsz(self, accounts: bool = False) -> dict[str, Any]:
        """JetStream totals over every account that has it (nats-server's
        /jsz: the engines' usage and counts, the server's id and time, the
        reservations of streams with `max_bytes`, the configured limits);
        `accounts`: each account's usage too (``/jsz?accounts=true``)."""
        server = self.server
        services = [svc for acc in server.accounts.values() for svc in acc.services] or server.services
        parts = [dict(service.jsz()) for service in services if isinstance(service, JszReporter)]
        if not parts:
            # nats-server's /jsz without JetStream
            return {
                "memory": 0, "storage": 0, "reserved_memory": 0, "reserved_storage": 0,
                "accounts": 0, "ha_assets": 0, "api": {"level": 0, "total": 0, "errors": 0},
                "server_id": server.server_id, "now": _rfc3339(time.time()), "disabled": True,
                "config": {"max_memory": 0, "max_storage": 0},
                "streams": 0, "consumers": 0, "messages": 0, "bytes": 0, "total": 0,
            }
        stats = dict(parts[0])
        if len(parts) > 1:
            for key in ("memory", "storage", "streams", "consumers", "messages", "bytes"):
                stats[key] = sum(int(p.get(key, 0)) for p in parts)
            api = dict(stats.get("api", {}))
            for key in ("total", "errors"):
                api[key] = sum(int(p.get("api", {}).get(key, 0)) for p in parts)
            stats["api"] = api
        engines = [acc.jetstream for acc in server.accounts.values() if acc.jetstream is not None]
        reserved = _reserved(engines)
        out: dict[str, Any] = {
            "server_id": server.server_id,
            "now": _rfc3339(time.time()),
            **stats,
            "reserved_memory": reserved["memory"],
            "reserved_storage": reserved["file"],
            "accounts": len(parts),
            "ha_assets": 0,
            "limits": _limits(server.config.jetstream.limits),
            "total": len(parts),
        }
        if accounts:
            out["account_details"] = [
                _account_detail(acc.name, acc.jetstream)
                for acc in server.accounts.values()
                if acc.jetstream is not None
            ]
        return out

    def _system_account(self) -> str | None:
        return next((a.name for a in self.server.accounts.values() if a.is_system), None)

    def accountz(self, account: str = "") -> dict[str, Any] | None:
        """nats-server's /accountz: the account names, or one account's detail
        (None when there is no such account)."""
        server = self.server
        system = self._system_account()
        out: dict[str, Any] = {"server_id": server.server_id, "now": _rfc3339(time.time())}
        if system is not None:
            out["system_account"] = system
        if not account:
            out["accounts"] = list(server.accounts)
            return out
        acc = server.accounts.get(account)
        if acc is None:
            return None
        clients = sum(
            1
            for conn in server.connections.values()
            if conn.session.identity is not None and conn.session.identity.account == account
        )
        out["account_detail"] = {
            "account_name": acc.name,
            "update_time": _rfc3339(acc.updated or server.start_time),
            **({"is_system": True} if acc.is_system else {}),
            "expired": False,
            "complete": True,
            "jetstream_enabled": acc.jetstream is not None,
            "leafnode_connections": 0,
            "client_connections": clients,
            "subscriptions": acc.broker.num_subscriptions,
            "name_tag": acc.name_tag or acc.name,
        }
        return out


def _reserved(engines: Sequence[JetStream]) -> dict[str, int]:
    """What nats-server reserves: the `max_bytes` of every stream that sets one,
    by storage ("memory", "file")."""
    return {
        storage: sum(engine.store_limits.reserved(storage) for engine in engines)
        for storage in ("memory", "file")
    }


def _limits(limits: JetStreamLimits) -> dict[str, int]:
    """``jetstream { limits { ... } }`` as nats-server's /jsz shows them (only those set)."""
    shown = {
        "max_request_batch": limits.max_request_batch,
        "max_ack_pending": limits.max_ack_pending,
        "max_duplicate_window": limits.duplicate_window_ns,
    }
    return {key: value for key, value in shown.items() if value}


def _account_detail(name: str, engine: JetStream) -> dict[str, Any]:
    """One account of ``/jsz?accounts=true``. nats-server reports the account's
    limits as `reserved_memory` / `reserved_storage` (-1 as the unsigned
    64-bit integer it prints); so does this."""
    limits = engine.store_limits.account
    return {
        "name": name,
        "id": name,
        "memory": engine.store_limits.usage("memory"),
        "storage": engine.store_limits.usage("file"),
        "reserved_memory": limits.max_memory % 2**64,
        "reserved_storage": limits.max_storage % 2**64,
        "accounts": 0,
        "ha_assets": 0,
        "api": {"level": 0, "total": engine.api_stats.total, "errors": engine.api_stats.errors},
    }


def _auth_fields(identity: Identity | None) -> dict[str, str]:
    """nats-server's /connz?auth=1 fields: the user, the account unless it
    is the global one, and the account's name tag."""
    out: dict[str, str] = {}
    if identity is None:
        return out
    if identity.user:
        out["authorized_user"] = identity.user
    if identity.account != GLOBAL_ACCOUNT:
        out["account"] = identity.account
    out["name_tag"] = identity.name_tag or identity.account
    return out


def _rfc3339(ts: float) -> str:
    """A wall-clock time (seconds) as the endpoints print it: nine fraction digits."""
    return rfc3339_ns(int(ts * NS_PER_SECOND), fixed_fraction=True)


def _uptime(seconds: float) -> str:
    """Go-ish compact duration as nats-server's /varz uptime ("1h2m3s", "4s")."""
    total = int(seconds)
    days, rem = divmod(total, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    out = ""
    if days:
        out += f"{days}d"
    if days or hours:
        out += f"{hours}h"
    if days or hours or minutes:
        out += f"{minutes}m"
    return out + f"{secs}s"


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _cpu_percent(elapsed: float) -> float:
    times = os.times()
    used = times.user + times.system
    return round(100.0 * used / elapsed, 2) if elapsed > 0 else 0.0
