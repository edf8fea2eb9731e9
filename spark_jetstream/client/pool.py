"""One connection per process and server list, reused across partitions and micro-batches.

Spark runs a partition's read or write in a Python worker process that it
reuses for the next task (`spark.python.worker.reuse`, on by default). A new
connection per task cost a TCP (and TLS) handshake and a CONNECT round trip
per partition per batch; the pool keeps the connection open between tasks.

- `connect(options)` leases a connection: the idle one for the options'
  `pool_key` (servers, credentials, TLS, inbox prefix, API prefix) after a
  PING/PONG health check, else a new one (`LeanConnection.open`: the server
  list in random order, failing over, retried within `retryTimeout`).
  `lease(options)` is the same with one pass over the servers and no
  backoff, for callers that run their own retry loop (the sink's publisher).
- `conn.close()` hands the connection back: the last user's subscriptions
  and buffered frames are dropped and it waits idle for the next lease. A
  connection that broke (a failed write may have sent half a frame) or came
  back after the pool already holds one for its key is closed instead: at
  most one idle connection per key (a second one exists only while two
  threads of one process lease at the same time).
- At process exit (`atexit`) the idle connections are closed; a worker that
  Spark ends with `os._exit` skips atexit, and its sockets close with the
  process. A forked child (Spark's worker daemon forks the workers) starts
  with an empty pool and never touches its parent's sockets.
- An idle connection does not answer the server's PINGs; after a few minutes
  the server drops it as stale, and the health check of the next lease opens
  a new one.

Thread-safe: the idle table is guarded by a lock; a leased connection belongs
to one thread until it is closed.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from spark_jetstream.client.connection import HEALTH_CHECK_S, LeanConnection
from spark_jetstream.client.errors import NatsError
from spark_jetstream.options.connection import ConnectionOptions

log = logging.getLogger(__name__)


class ConnectionPool:
    """Idle connections by `ConnectionOptions.pool_key`, at most one each."""

    def __init__(
        self,
        *,
        open_retrying: Callable[[ConnectionOptions], LeanConnection] = LeanConnection.open,
        open_once: Callable[[ConnectionOptions], LeanConnection] = LeanConnection.connect,
    ) -> None:
        self._open_retrying = open_retrying
        self._open_once = open_once
        self._lock = threading.Lock()
        self._idle: dict[tuple[Any, ...], LeanConnection] = {}
        self._pid = os.getpid()
        self.opened = 0  # connections this pool opened (for tests and logs)
        self.reused = 0

    def connect(self, options: ConnectionOptions) -> LeanConnection:
        """A healthy connection for `options`; opens one (with retries) if none is idle."""
        return self._lease(options, retrying=True)

    def lease(self, options: ConnectionOptions) -> LeanConnection:
        """Like `connect`, but a new connection gets one pass over the servers, no retries."""
        return self._lease(options, retrying=False)

    def _lease(self, options: ConnectionOptions, *, retrying: bool) -> LeanConnection:
        key = options.pool_key
        with self._lock:
            self._forget_if_forked()
            conn = self._idle.pop(key, None)
        if conn is not None:
            conn.options = options  # this user's timeouts and retry settings
            if conn.healthy(min(HEALTH_CHECK_S, options.request_timeout_s)):
                self.reused += 1
                conn._release = self._release
                return conn
            conn.discard()
        conn = (self._open_retrying if retrying else self._open_once)(options)
        self.opened += 1
        log.debug("opened a pooled connection to %s (%d opened in this process)", conn.server_url, self.opened)
        conn._release = self._release
        return conn

    def _release(self, conn: LeanConnection) -> None:
        if conn.broken or conn.sock is None:
            conn.discard()
            return
        try:
            conn.reset_for_reuse()
        except (NatsError, OSError):  # the UNSUBs could not be sent: the connection is gone
            conn.discard()
            return
        key = conn.options.pool_key
        with self._lock:
            self._forget_if_forked()
            if key not in self._idle:
                self._idle[key] = conn
                return
        conn.discard()  # one idle connection per key is enough

    def _forget_if_forked(self) -> None:
        """In a forked child, the idle sockets are the parent's: drop them without closing."""
        pid = os.getpid()
        if pid != self._pid:
            self._idle = {}
            self._pid = pid
            self.opened = self.reused = 0

    def close_all(self) -> None:
        """Close every idle connection (leased ones close when their users release them)."""
        with self._lock:
            self._forget_if_forked()
            idle, self._idle = list(self._idle.values()), {}
        for conn in idle:
            conn.discard()

    def idle_count(self) -> int:
        with self._lock:
            self._forget_if_forked()
            return len(self._idle)


POOL = ConnectionPool()
atexit.register(POOL.close_all)


def connect(options: ConnectionOptions) -> LeanConnection:
    """A pooled connection for `options` (close() gives it back); see `ConnectionPool.connect`."""
    return POOL.connect(options)


def lease(options: ConnectionOptions) -> LeanConnection:
    """A pooled connection, one pass over the servers if a new one is needed (the sink's
    publisher retries on its own, within ackTimeout)."""
    return POOL.lease(options)
