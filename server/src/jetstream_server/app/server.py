"""The server: the TCP listener, the broker, the services and the monitor.

The broker (routing) and the per-client sessions are sans-IO
(`jetstream_server.core`); this module wires them to sockets: it accepts
connections (`ClientConnection`), owns the write batcher and the clock, and
serves the monitoring data.

`NatsServer.start()` (on a running loop) starts the services on the broker,
then the listener, then the monitoring HTTP server, and logs the same lines
nats-server logs (``Listening for client connections on <host>:<port>``,
``Starting http monitor on <host>:<port>``, ``Server is ready``), which
`jetstream_testing.process` parses. `stop()` closes the listener, then the client
connections, then the services (JetStream flushes its store), then the monitor.

Invariants: services start before any client is accepted and close after
the listener stopped; counters (`in_msgs`, `out_msgs`, ...) are the
server-wide totals `/varz` reports.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import platform
import secrets
import ssl
import time
from dataclasses import replace
from typing import Any, Final

from jetstream_server.app.accounts import Account, build_accounts
from jetstream_server.app.connection import ClientConnection
from jetstream_server.app.lame_duck import enter_lame_duck
from jetstream_server.app.listen import bind_socket, join_host_port, listen_backlog
from jetstream_server.app.loop_clock import LoopClock
from jetstream_server.app.loop_watchdog import LoopWatchdog
from jetstream_server.app.monitoring import MonitorServer
from jetstream_server.app.services import with_store_defaults
from jetstream_server.app.tls import make_server_context
from jetstream_server.app.write_batch import WriteBatcher
from jetstream_server.config import ConfigError, ServerConfig, WebSocketSettings
from jetstream_server.core.auth import GLOBAL_ACCOUNT, Authenticator, Identity
from jetstream_server.core.clock import Clock
from jetstream_server.core.router import Service, ShutdownNotice
from jetstream_server.core.routing import Broker
from jetstream_server.jetstream.versioning import SERVER_VERSION

log = logging.getLogger(__name__)

GO_VERSION: Final = "go1.24.0"
PROTO: Final = 1
_ID_ALPHABET: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def new_server_id() -> str:
    """A nats-server-style id: 'N' followed by 55 base32 characters."""
    return "N" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(55))


class NatsServer:
    def __init__(
        self,
        config: ServerConfig,
        *,
        clock: Clock | None = None,
        services: list[Service] | None = None,
    ) -> None:
        # store limits left unset get nats-server's computed defaults
        config = replace(config, jetstream=with_store_defaults(config.jetstream))
        self.config = config
        self.clock: Clock = clock or LoopClock()
        self.broker = Broker()
        self.auth: Authenticator = config.auth.authenticator()
        self.session_settings = config.session_settings()
        self.batcher = WriteBatcher()
        self.watchdog = LoopWatchdog(warn_s=config.loop_lag_warning_s)
        self.server_id = new_server_id()
        self.server_name = config.server_name or self.server_id
        self.services: list[Service] = [] if services is None else services
        self._build_services = services is None
        # every account's broker and services; the global account's are
        # `broker` and `services` (app/accounts.py)
        self.accounts: dict[str, Account] = {}
        self.account_brokers: dict[str, Broker] = {}
        self.connections: dict[int, ClientConnection] = {}
        self._cids = itertools.count(1)
        self.total_connections = 0
        # totals of closed connections; live ones are summed on demand (/varz),
        # which keeps per-message counting to the connection's own counters
        self._closed_totals = [0, 0, 0, 0]
        self.slow_consumers = 0
        self.start_time = time.time()
        self.port = 0
        self.http_port: int | None = None
        self.tls_context: ssl.SSLContext | None = None
        self._listener: asyncio.Server | None = None
        self._ws_listener: asyncio.Server | None = None
        self.websocket_port = 0
        self._monitor: MonitorServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.ready = asyncio.Event()
        self.stopped = False
        self.finished = asyncio.Event()  # set once stop() is done
        self.lame_duck = False
        self._services_closed = False

    @property
    def http_host(self) -> str:
        """Where the monitor listens: `http: host:port`, else the client host."""
        return self.config.http_host or self.config.host

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None, "server not started"
        return self._loop

    # -- lifecycle -----------------------------------------------------------------
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.batcher.loop = self._loop
        if isinstance(self.clock, LoopClock):
            self.clock = LoopClock(self._loop, watchdog=self.watchdog)
        self.watchdog.start(self._loop)
        cfg = self.config
        log.info("Starting nats-server")
        log.info("  Version:  %s (bundled Python JetStream server)", SERVER_VERSION)
        log.info("  Name:     %s", self.server_name)
        log.info("  ID:       %s", self.server_id)
        if cfg.tls.enabled:
            self.tls_context = make_server_context(cfg.tls)
        self.accounts = build_accounts(
            cfg,
            self.clock,
            self.broker,
            None if self._build_services else self.services,
            server_name=self.server_name,
        )
        self.account_brokers = {name: acc.broker for name, acc in self.accounts.items()}
        for broker in self.account_brokers.values():
            broker.schedule = self.loop.call_soon  # closed connections' subscriptions leave in turns
        self.services = self.accounts[GLOBAL_ACCOUNT].services
        started: list[Service] = []
        try:
            for account in self.accounts.values():
                for service in account.services:
                    service.start(account.broker)
                    started.append(service)
                account.updated = time.time()
            if cfg.http_port is not None:
                self._monitor = MonitorServer(self)
                self.http_port = await self._monitor.start(self.http_host, cfg.http_port)
                log.info("Starting http monitor on %s", join_host_port(self.http_host, self.http_port))
            sock = bind_socket(cfg.host, 0 if cfg.port == -1 else cfg.port)
            self._listener = await self.loop.create_server(
                self._new_connection, sock=sock, backlog=listen_backlog()
            )
        except BaseException:
            for service in reversed(started):
                service.close()
            if self._monitor is not None:
                await self._monitor.stop()
            raise
        sock = self._listener.sockets[0]
        self.port = int(sock.getsockname()[1])
        log.info("Listening for client connections on %s", join_host_port(cfg.host, self.port))
        if cfg.websocket is not None:
            await self._listen_websocket(cfg.websocket)
        if self.auth.required:
            log.info("Client authentication required")
        if self.tls_context is not None:
            log.info("TLS required for client connections")
        log.info("Server is ready")
        self.ready.set()

    def _new_connection(self) -> ClientConnection:
        return ClientConnection(self, next(self._cids))

    async def _listen_websocket(self, ws: WebSocketSettings) -> None:
        try:
            from jetstream_server.app.websocket import WebSocketConnection
        except ImportError:
            raise ConfigError(
                "websocket: needs the wsproto package (pip install 'jetstream-server[websocket]')"
            ) from None
        ctx = make_server_context(ws.tls) if ws.tls is not None else None
        host = ws.host or self.config.host

        def protocol() -> WebSocketConnection:
            return WebSocketConnection(
                lambda: ClientConnection(self, next(self._cids), websocket=True),
                loop=self.loop,
                compression=ws.compression,
                handshake_timeout_s=ws.handshake_timeout_s,
                max_inflated=self.config.max_pending,
            )

        sock = bind_socket(host, 0 if ws.port == -1 else ws.port)
        self._ws_listener = await self.loop.create_server(
            protocol, sock=sock, ssl=ctx, backlog=listen_backlog()
        )
        self.websocket_port = int(sock.getsockname()[1])
        scheme = "wss" if ctx is not None else "ws"
        log.info(
            "Listening for websocket clients on %s://%s",
            scheme,
            join_host_port(host, self.websocket_port),
        )
        if ctx is None:
            log.warning("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!")

    async def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        log.info("Initiating Shutdown...")
        self.stop_listening()
        for account in self.accounts.values():
            for service in account.services:
                if isinstance(service, ShutdownNotice):
                    try:
                        service.shutting_down()
                    except Exception:
                        log.exception("service %r failed to signal the shutdown", service)
        for conn in list(self.connections.values()):
            conn.close()
        if self._listener is not None:
            try:
                await asyncio.wait_for(self._listener.wait_closed(), 5.0)
            except asyncio.TimeoutError:
                log.warning("listener did not close within 5s")
        self.close_services()
        if isinstance(self.clock, LoopClock):
            self.clock.shutdown()  # disk jobs in flight finish before the process ends
        if self._monitor is not None:
            await self._monitor.stop()
        self.watchdog.stop()
        log.info("Server Exiting..")
        self.finished.set()

    def stop_listening(self) -> None:
        """Accept no new client (the connected ones stay)."""
        for listener in (self._listener, self._ws_listener):
            if listener is not None:
                listener.close()

    def close_services(self) -> None:
        """Close the services (JetStream flushes its store), once."""
        if self._services_closed:
            return
        self._services_closed = True
        every = [svc for acc in self.accounts.values() for svc in acc.services] or self.services
        for service in reversed(every):
            try:
                service.close()
            except Exception:
                log.exception("service %r failed to close", service)

    async def enter_lame_duck(self) -> None:
        """Lame duck mode (SIGUSR2), run to its end: see `app.lame_duck`."""
        await enter_lame_duck(self)

    # -- connections ---------------------------------------------------------------
    def connection_opened(self, conn: ClientConnection) -> bool:
        self.total_connections += 1
        limit = self.config.max_connections
        # nats-server: a negative limit (max_connections: 0 in a file) refuses all
        if limit < 0 or (limit > 0 and len(self.connections) >= limit):
            return False
        self.connections[conn.cid] = conn
        log.debug("cid=%d client connection created from %s:%d", conn.cid, conn.ip, conn.port)
        return True

    def connection_closed(self, conn: ClientConnection) -> None:
        if self.connections.pop(conn.cid, None) is not None:
            session = conn.session
            totals = self._closed_totals
            totals[0] += session.in_msgs
            totals[1] += session.in_bytes
            totals[2] += session.out_msgs
            totals[3] += session.out_bytes
        log.debug("cid=%d client connection closed", conn.cid)

    def slow_consumer_detected(self, conn: ClientConnection) -> None:
        self.slow_consumers += 1

    def _totals(self) -> list[int]:
        totals = list(self._closed_totals)
        for conn in self.connections.values():
            session = conn.session
            totals[0] += session.in_msgs
            totals[1] += session.in_bytes
            totals[2] += session.out_msgs
            totals[3] += session.out_bytes
        return totals

    @property
    def in_msgs(self) -> int:
        return self._totals()[0]

    @property
    def in_bytes(self) -> int:
        return self._totals()[1]

    @property
    def out_msgs(self) -> int:
        return self._totals()[2]

    @property
    def out_bytes(self) -> int:
        return self._totals()[3]

    def info_for(self, conn: ClientConnection | None) -> dict[str, Any]:
        cfg = self.config
        info: dict[str, Any] = {
            "server_id": self.server_id,
            "server_name": self.server_name,
            "version": SERVER_VERSION,
            "proto": PROTO,
            "go": GO_VERSION,
            "host": cfg.host,
            "port": self.port,
            "headers": True,
            "max_payload": cfg.max_payload,
        }
        if cfg.jetstream.enabled:
            info["jetstream"] = True
        if self.auth.required and self.auth.anonymous is None:
            # with a no_auth_user nats-server does not ask for credentials
            info["auth_required"] = True
        if self.tls_context is not None:
            info["tls_required"] = True
            if cfg.tls.verify:
                info["tls_verify"] = True
        if cfg.jetstream.domain:
            info["domain"] = cfg.jetstream.domain
        if conn is not None and conn.websocket:
            # TLS, if any, was the WebSocket listener's
            info.pop("tls_required", None)
            info.pop("tls_verify", None)
        if conn is not None:
            info["client_id"] = conn.cid
            info["client_ip"] = conn.ip
        return info

    # -- monitoring data -------------------------------------------------------------
    def varz(self) -> dict[str, Any]:
        cfg = self.config
        now = time.time()
        info = self.info_for(None)
        js = self.jsz()
        totals = self._totals()
        varz: dict[str, Any] = {
            **info,
            "now": _rfc3339(now),
            "start": _rfc3339(self.start_time),
            "uptime": _uptime(now - self.start_time),
            "mem": _rss_bytes(),
            "cores": os.cpu_count() or 1,
            "cpu": _cpu_percent(now - self.start_time),
            "connections": len(self.connections),
            "total_connections": self.total_connections,
            "routes": 0,
            "remotes": 0,
            "leafnodes": 0,
            "in_msgs": totals[0],
            "out_msgs": totals[2],
            "in_bytes": totals[1],
            "out_bytes": totals[3],
            "slow_consumers": self.slow_consumers,
            "event_loop": self.watchdog.varz(),  # bundled server only: its loop's lag
            "subscriptions": sum(b.num_subscriptions for b in self.account_brokers.values())
            or self.broker.num_subscriptions,
            "http_host": self.http_host,
            "http_port": self.http_port or 0,
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
                **({"stats": js} if "disabled" not in js else {}),
            },
            "system": platform.system().lower(),
            **({"system_account": system} if (system := self._system_account()) else {}),
        }
        return varz

    def connz(self, auth: bool = False) -> dict[str, Any]:
        """`auth`: show each connection's ``authorized_user`` (and a
        non-global ``account``), as nats-server's ``/connz?auth=1``."""
        now = time.time()
        conns = []
        for conn in sorted(self.connections.values(), key=lambda c: c.cid):
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
                    **({"tls_version": "1.3"} if self.tls_context is not None else {}),
                }
            )
        return {
            "server_id": self.server_id,
            "now": _rfc3339(now),
            "num_connections": len(conns),
            "total": len(conns),
            "offset": 0,
            "limit": 1024,
            "connections": conns,
        }

    def jsz(self, accounts: bool = False) -> dict[str, Any]:
        """JetStream totals over every account that has it (nats-server's
        /jsz); `accounts`: each account's usage too (``/jsz?accounts=true``)."""
        parts: list[dict[str, Any]] = []
        services = [svc for acc in self.accounts.values() for svc in acc.services] or self.services
        for service in services:
            jsz = getattr(service, "jsz", None)
            if callable(jsz):
                result = jsz()
                parts.append(dict(result) if isinstance(result, dict) else {"data": result})
        if not parts:
            # nats-server's /jsz without JetStream
            return {
                "memory": 0, "storage": 0, "reserved_memory": 0, "reserved_storage": 0,
                "accounts": 0, "ha_assets": 0, "api": {"level": 0, "total": 0, "errors": 0},
                "server_id": self.server_id, "now": _rfc3339(time.time()), "disabled": True,
                "config": {"max_memory": 0, "max_storage": 0},
                "streams": 0, "consumers": 0, "messages": 0, "bytes": 0, "total": 0,
            }
        if len(parts) == 1 and not accounts:
            return parts[0]
        total = dict(parts[0])
        for key in ("memory", "storage", "streams", "consumers", "messages", "bytes"):
            total[key] = sum(int(p.get(key, 0)) for p in parts)
        total["api"] = {
            k: sum(int(p.get("api", {}).get(k, 0)) for p in parts) for k in ("total", "errors")
        }
        total["accounts"] = len(parts)
        if accounts:
            total["account_details"] = [
                _account_detail(acc.name, acc.jetstream)
                for acc in self.accounts.values()
                if acc.jetstream is not None
            ]
        return total

    def _system_account(self) -> str | None:
        return next((a.name for a in self.accounts.values() if a.is_system), None)

    def accountz(self, account: str = "") -> dict[str, Any] | None:
        """nats-server's /accountz: the account names, or one account's detail
        (None when there is no such account)."""
        system = self._system_account()
        out: dict[str, Any] = {"server_id": self.server_id, "now": _rfc3339(time.time())}
        if system is not None:
            out["system_account"] = system
        if not account:
            out["accounts"] = list(self.accounts)
            return out
        acc = self.accounts.get(account)
        if acc is None:
            return None
        clients = sum(
            1
            for conn in self.connections.values()
            if conn.session.identity is not None and conn.session.identity.account == account
        )
        out["account_detail"] = {
            "account_name": acc.name,
            "update_time": _rfc3339(acc.updated or self.start_time),
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


def _account_detail(name: str, engine: Any) -> dict[str, Any]:
    """One account of ``/jsz?accounts=true``. nats-server reports the account's
    limits as `reserved_memory` / `reserved_storage` (-1 as the unsigned
    64-bit integer it prints); so does this."""
    limits = engine.account_limits
    return {
        "name": name,
        "id": name,
        "memory": engine.usage("memory"),
        "storage": engine.usage("file"),
        "reserved_memory": limits.max_memory % 2**64,
        "reserved_storage": limits.max_storage % 2**64,
        "accounts": 0,
        "ha_assets": 0,
        "api": {"level": 0, "total": engine.api_total, "errors": engine.api_errors},
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
    secs = int(ts)
    nanos = int((ts - secs) * 1e9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{nanos:09d}Z"


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
