"""`EmbeddedServer`: the bundled server in a background thread of this process.

    with EmbeddedServer(store_dir=None, port=0) as srv:
        nc = await nats.connect(srv.url)

The server runs on its own event loop in a daemon thread. `start()` returns
once the listener accepts connections (or raises what start-up raised);
`stop()` stops it cleanly (listener, connections, services) and joins the
thread; it is idempotent. `store_dir=None` gives JetStream a temporary
directory that is removed on stop. Other keyword arguments are
`ServerConfig` fields (``max_payload=...``, ``server_name=...``,
``auth=AuthSettings(...)``) or `JetStreamSettings` fields
(``max_file_store=...``, ``sync_always=...``). `speedups` picks the event loop
(``auto``, ``on``, ``off``; None: `JETSTREAM_SPEEDUPS`, else auto: see
`jetstream_server.app.speedups`); a mode that cannot be honoured raises from the constructor.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import threading
from dataclasses import fields, replace
from typing import Any

from jetstream_server.app.speedups import build_line, choose, holds_first_bytes, run
from jetstream_server.config import JetStreamSettings, ServerConfig

log = logging.getLogger(__name__)

_CONFIG_FIELDS = {f.name for f in fields(ServerConfig)}
_JS_FIELDS = {f.name for f in fields(JetStreamSettings)}


class EmbeddedServer:
    def __init__(
        self,
        store_dir: str | None = None,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        http_port: int | None = None,
        startup_timeout: float = 20.0,
        speedups: str | None = None,
        **options: Any,
    ) -> None:
        unknown = set(options) - _CONFIG_FIELDS - _JS_FIELDS
        if unknown:
            raise TypeError(f"EmbeddedServer: unknown option(s) {sorted(unknown)}")
        js_opts = {k: v for k, v in options.items() if k in _JS_FIELDS and k not in _CONFIG_FIELDS}
        cfg_opts = {k: v for k, v in options.items() if k in _CONFIG_FIELDS}
        base = ServerConfig(host=host, port=port, http_port=http_port)
        config = replace(base, **cfg_opts)
        self._temp_dir: str | None = None
        if store_dir is None and config.jetstream.store_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="jetstream-embedded-")
            store_dir = self._temp_dir
        js = replace(config.jetstream, **js_opts)
        if store_dir is not None:
            js = replace(js, store_dir=str(store_dir))
        self.config = replace(config, jetstream=js).validate()
        self.loop_choice = choose(speedups, hold_first_bytes=holds_first_bytes(self.config))
        self.startup_timeout = startup_timeout
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._stop_event: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self.port = 0
        self.http_port: int | None = None

    @property
    def url(self) -> str:
        host = self.config.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"nats://{host}:{self.port}"

    @property
    def server(self) -> Any:
        """The running `NatsServer` (for in-process inspection; touch it on its loop only)."""
        return self._server

    def start(self) -> EmbeddedServer:
        if self._thread is not None:
            return self
        self._started.clear()
        self._thread = threading.Thread(target=self._run, name="jetstream-embedded", daemon=True)
        self._thread.start()
        if not self._started.wait(self.startup_timeout):
            self.stop()
            raise RuntimeError("embedded server did not start in time")
        if self._error is not None:
            error = self._error
            self._thread.join(5)
            self._thread = None
            self._cleanup_dir()
            raise error
        return self

    def _run(self) -> None:
        try:
            run(self._main(), self.loop_choice)
        except BaseException as exc:  # reported to the starting thread
            if not self._started.is_set():
                self._error = exc
            else:
                log.exception("embedded server failed")
        finally:
            self._started.set()

    async def _main(self) -> None:
        from jetstream_server.app.server import NatsServer

        log.info("%s", self.loop_choice.describe())
        log.info("%s", build_line())
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        self._server = NatsServer(self.config)
        await self._server.start()
        self.port = self._server.port
        self.http_port = self._server.http_port
        self._started.set()
        try:
            await self._stop_event.wait()
        finally:
            await self._server.stop()

    def stop(self) -> None:
        thread = self._thread
        if thread is None:
            return
        loop, event = self._loop, self._stop_event
        if loop is not None and event is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:
                pass  # loop already closed
        thread.join(30)
        self._thread = None
        self._cleanup_dir()

    def _cleanup_dir(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
