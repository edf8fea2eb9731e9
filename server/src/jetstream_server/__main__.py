"""The `jetstream-server` / `python -m jetstream_server` command line, with nats-server's flags.

Flags: ``-a/--addr``, ``-p/--port`` (-1 = random), ``-m/--http_port``,
``-js/--jetstream`` (JetStream is off without it or a ``jetstream`` entry in
the config file, as on nats-server), ``-sd/--store_dir``,
``-c/--config``, ``--user``, ``--pass``, ``--auth``, ``--tls``, ``--tlscert``,
``--tlskey``, ``--tlscacert``, ``--tlsverify``, ``-D``, ``-V``, ``-DV``,
``-n/--name``, ``-sl/--signal`` (see `jetstream_server.signals`), ``-P/--pid``, and one of
its own: ``--speedups auto|on|off`` (the event loop, `jetstream_server.app.speedups`).
Precedence: defaults < config file < flags.

Logs go to stderr, one flushed line each, in nats-server's shape
(``[pid] 2006/01/02 15:04:05.000000 [INF] Server is ready``). SIGTERM and
SIGINT stop the server cleanly and exit 0; SIGUSR2 enters lame duck mode
(`jetstream_server.app.lame_duck`), during which SIGTERM is ignored; a bad flag or config exits 1 with
a message naming the problem.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import gc
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from jetstream_server.config import (
    AuthSettings,
    ConfigError,
    JetStreamSettings,
    ServerConfig,
    TlsSettings,
    load_config_file,
)
from jetstream_server.core.session import TRACE
from jetstream_server.signals import GO_SIGNAL_NAMES, SignalError, process_signal

logging.addLevelName(TRACE, "TRC")
_LEVEL_TAGS = {TRACE: "TRC", logging.DEBUG: "DBG", logging.INFO: "INF", logging.WARNING: "WRN",
               logging.ERROR: "ERR", logging.CRITICAL: "FTL"}


class NatsLogFormatter(logging.Formatter):
    """``[pid] 2006/01/02 15:04:05.000000 [INF] message`` like nats-server."""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(record.created))
        micros = int((record.created % 1) * 1_000_000)
        tag = _LEVEL_TAGS.get(record.levelno, record.levelname[:3])
        text = f"[{os.getpid()}] {ts}.{micros:06d} [{tag}] {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _FlushingHandler(logging.StreamHandler):  # type: ignore[type-arg]
    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        self.flush()


def configure_logging(debug: bool, trace: bool) -> None:
    handler = _FlushingHandler(sys.stderr)
    handler.setFormatter(NatsLogFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(TRACE if trace else logging.DEBUG if debug else logging.INFO)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jetstream-server",
        description="A NATS JetStream server in pure Python, with nats-server's flags.",
        allow_abbrev=False,
    )
    p.add_argument("-a", "--addr", "--net", dest="host", help="bind to host address")
    p.add_argument("-p", "--port", type=int, dest="port", help="client port (-1 = random)")
    p.add_argument("-m", "--http_port", type=int, dest="http_port", help="monitoring port")
    p.add_argument("-js", "--jetstream", action="store_true", help="enable JetStream")
    p.add_argument("-sd", "--store_dir", dest="store_dir", help="JetStream storage directory")
    p.add_argument("-c", "--config", dest="config", help="configuration file")
    p.add_argument("-n", "--name", "--server_name", dest="name", help="server name")
    p.add_argument("--user", dest="user", help="user required for connections")
    p.add_argument("--pass", dest="password", help="password required for connections")
    p.add_argument("--auth", dest="token", help="authorization token required for connections")
    p.add_argument("--tls", action="store_true", help="enable TLS")
    p.add_argument("--tlscert", dest="tlscert", help="server certificate file")
    p.add_argument("--tlskey", dest="tlskey", help="private key for the server certificate")
    p.add_argument("--tlscacert", dest="tlscacert", help="client certificate CA for verification")
    p.add_argument("--tlsverify", action="store_true", help="require and verify client certificates")
    p.add_argument("-D", "--debug", action="store_true", help="enable debug output")
    p.add_argument("-V", "--trace", action="store_true", help="trace the raw protocol")
    p.add_argument("-DV", dest="debug_trace", action="store_true", help="debug and trace")
    p.add_argument(
        "-sl", "--signal", dest="signal", metavar="SIGNAL[=PID]",
        help="send a signal to a running server (ldm, stop, quit, term, reopen, reload); "
        "PID is a pid or a pid file",
    )
    p.add_argument("-P", "--pid", dest="pid_file", help="file to store the PID in")
    p.add_argument(
        "--speedups", dest="speedups", choices=("auto", "on", "off"),
        help="the event loop of the speedups extra (uvloop): auto (default: when installed), "
        "on (required), off; default from JETSTREAM_SPEEDUPS",
    )
    return p


def config_from_args(argv: Sequence[str]) -> ServerConfig:
    """Defaults, then the config file, then flags; raises `ConfigError`."""
    args = build_parser().parse_args(list(argv))
    # as nats-server: JetStream only with -js or a `jetstream` entry in the file
    cfg = ServerConfig(jetstream=JetStreamSettings(enabled=False))
    if args.config:
        cfg = load_config_file(args.config, cfg)
    changes: dict[str, object] = {}
    if args.host is not None:
        changes["host"] = args.host
    if args.port is not None:
        changes["port"] = args.port
    if args.http_port is not None:
        changes["http_port"] = args.http_port
    if args.name is not None:
        changes["server_name"] = args.name
    if args.debug or args.debug_trace:
        changes["debug"] = True
    if args.trace or args.debug_trace:
        changes["trace"] = True
    js = cfg.jetstream
    if args.jetstream:
        js = replace(js, enabled=True)
    if args.store_dir is not None:
        js = replace(js, store_dir=args.store_dir)
    changes["jetstream"] = js
    if args.user is not None or args.password is not None or args.token is not None:
        if (args.user is None) != (args.password is None) and args.token is None:
            raise ConfigError("--user and --pass go together")
        changes["auth"] = AuthSettings(
            user=args.user if args.user is not None else cfg.auth.user,
            password=args.password if args.password is not None else cfg.auth.password,
            token=args.token if args.token is not None else cfg.auth.token,
        )
    if args.tls or args.tlscert or args.tlskey or args.tlscacert or args.tlsverify:
        tls = TlsSettings(
            enabled=True,
            cert_file=args.tlscert or cfg.tls.cert_file,
            key_file=args.tlskey or cfg.tls.key_file,
            ca_file=args.tlscacert or cfg.tls.ca_file,
            verify=args.tlsverify or cfg.tls.verify,
        )
        if not tls.cert_file or not tls.key_file:
            raise ConfigError("--tls needs --tlscert and --tlskey")
        changes["tls"] = tls
    return replace(cfg, **changes).validate()  # type: ignore[arg-type]


async def serve(config: ServerConfig) -> None:
    """Run until SIGINT, SIGTERM (ignored in lame duck mode, as nats-server
    does) or the end of lame duck mode (SIGUSR2), then stop cleanly."""
    from jetstream_server.app.server import NatsServer

    loop = asyncio.get_running_loop()
    srv = NatsServer(config)
    log = logging.getLogger(__name__)
    lame_duck: list[asyncio.Task[None]] = []

    def on_signal(sig: signal.Signals) -> None:
        log.info('Trapped "%s" signal', GO_SIGNAL_NAMES.get(sig, sig.name))
        if sig is signal.SIGUSR2:
            if not lame_duck:
                lame_duck.append(loop.create_task(srv.enter_lame_duck()))
        elif sig is signal.SIGINT or not srv.lame_duck:
            loop.create_task(srv.stop())

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR2):
        loop.add_signal_handler(sig, on_signal, sig)
    await srv.start()
    # everything built so far (modules, config, recovered JetStream state) lives
    # as long as the process: keep it out of the collector's generations, so
    # collections triggered by message traffic stay short
    gc.freeze()
    try:
        await srv.finished.wait()
    finally:
        await srv.stop()
        for task in lame_duck:
            task.cancel()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        parsed = build_parser().parse_args(args)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return 0 if exc.code in (0, None) else 1
    if parsed.signal:
        try:
            process_signal(parsed.signal)
        except SignalError as exc:
            sys.stderr.write(f"jetstream-server: {exc}\n")
            return 1
        return 0
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        sys.stderr.write(f"jetstream-server: configuration error: {exc}\n")
        return 1
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return 0 if exc.code in (0, None) else 1
    configure_logging(config.debug, config.trace)
    if parsed.pid_file:
        try:
            Path(parsed.pid_file).write_text(str(os.getpid()), encoding="ascii")
        except OSError as exc:
            logging.getLogger(__name__).error("Could not write pidfile: %s", exc)
            return 1
    from jetstream_server.app import speedups
    from jetstream_server.app.monitor_http import MonitorListenError

    try:
        loop_choice = speedups.choose(parsed.speedups, hold_first_bytes=speedups.holds_first_bytes(config))
    except speedups.SpeedupsUnavailable as exc:
        logging.getLogger(__name__).error("%s", exc)
        return 1
    logging.getLogger(__name__).info("%s", loop_choice.describe())
    logging.getLogger(__name__).info("%s", speedups.build_line())
    try:
        speedups.run(serve(config), loop_choice)
    except ConfigError as exc:
        logging.getLogger(__name__).error("configuration error: %s", exc)
        return 1
    except MonitorListenError as exc:  # nats-server's words, before its client port's
        logging.getLogger(__name__).error("Can't start monitoring: %s", exc)
        return 1
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            logging.getLogger(__name__).error(
                "Error listening on port: %s:%d, %s", config.host, config.port, exc
            )
        else:
            logging.getLogger(__name__).error("Could not start: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
