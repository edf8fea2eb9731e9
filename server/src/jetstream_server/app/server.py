"""The server: the TCP listener, the broker, the services and the monitor.

The broker (routing) and the per-client sessions are sans-IO
(`jetstream_server.core`); this module wires them to sockets: it accepts
connections (`ClientConnection`), owns the write batcher and the clock, and
starts the monitoring listener (`app.monitor_http`) on the routes of
`app.monitoring`, which builds the payloads from this server's state.

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
import secrets
import ssl
import time
from dataclasses import replace
from typing import Any, Final

from jetstream_server.app.accounts import Account, build_accounts
from jetstream_server.app.connection import ClientConnection
from jetstream_server.app.dashboard import Dashboard
from jetstream_server.app.lame_duck import enter_lame_duck
from jetstream_server.app.listen import bind_socket, join_host_port, listen_backlog
from jetstream_server.app.loop_clock import LoopClock
from jetstream_server.app.loop_watchdog import LoopWatchdog
from jetstream_server.app.monitor_http import MonitorServer
from jetstream_server.app.monitoring import Monitoring
from jetstream_server.app.services import with_store_defaults
from jetstream_server.app.tls import make_server_context
from jetstream_server.app.write_batch import WriteBatcher
from jetstream_server.config import ConfigError, ServerConfig, WebSocketSettings
from jetstream_server.core.auth import GLOBAL_ACCOUNT, Authenticator
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
        if cfg.auth.operator is not None and not cfg.system_account_name:
            log.warning("Trusted Operators should utilize a System Account")
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
                self._monitor = MonitorServer(Monitoring(self).routes(), pages=Dashboard(self))
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

    def traffic_totals(self) -> tuple[int, int, int, int]:
        """(in_msgs, in_bytes, out_msgs, out_bytes) of every connection so far."""
        in_msgs, in_bytes, out_msgs, out_bytes = self._closed_totals
        for conn in self.connections.values():
            session = conn.session
            in_msgs += session.in_msgs
            in_bytes += session.in_bytes
            out_msgs += session.out_msgs
            out_bytes += session.out_bytes
        return in_msgs, in_bytes, out_msgs, out_bytes

    @property
    def in_msgs(self) -> int:
        return self.traffic_totals()[0]

    @property
    def in_bytes(self) -> int:
        return self.traffic_totals()[1]

    @property
    def out_msgs(self) -> int:
        return self.traffic_totals()[2]

    @property
    def out_bytes(self) -> int:
        return self.traffic_totals()[3]

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
