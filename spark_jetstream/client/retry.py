"""Retries with backoff inside a total time budget, and what is worth retrying.

Every call the connector makes to the server (connect, a JetStream API
request, resuming a range read) runs under one `RetryBudget`, made from the
connection options: `retryTimeout` bounds the whole call, the waits between
attempts start at `retryBackoff` and double up to `retryBackoffMax`, each
with up to 20 % jitter so that many executors do not retry in step. A wait
that would end past the budget is not taken: the call fails then, with the
last error and how long it tried. Progress (a range read that got messages)
starts a fresh budget: the bound is on time without progress.

`is_transient(exc)` is the one place that decides what a retry may cure:
- a connection refused, reset or lost, or a connect attempt that timed out
  (the server is restarting, or one of the list is down);
- no reply in time (a cluster moving a leader, an overloaded server);
- "no responders" on a JetStream API subject, and the API's own "not now"
  errors (`TRANSIENT_API_ERRORS`: 503 `JetStream system temporarily
  unavailable` and friends);
- a range read whose consumer went away (the server restarted).
Not retried: authorization and permission errors, TLS certificate problems,
an unknown host name, and every other API error (stream not found, bad
configuration): waiting changes nothing there, and failing at once names the
problem.

Time is injected (`clock`, `sleep`, `rng`) so tests drive the budget with a
fake clock.
"""

from __future__ import annotations

import logging
import random
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from spark_jetstream.client.errors import (
    TRANSIENT_API_ERRORS,
    ConnectionLostError,
    JetStreamApiError,
    NatsTimeoutError,
    NoRespondersError,
    ReadInterruptedError,
    ServerError,
)
from spark_jetstream.options.connection import ConnectionOptions

log = logging.getLogger(__name__)
E = TypeVar("E", bound=BaseException)

JITTER = 0.2  # each wait is shortened by up to this fraction
# -ERR lines after which the server closes the connection for reasons a new one cures
_TRANSIENT_SERVER_ERRORS = ("stale connection", "slow consumer")


def exhausted(exc: E) -> E:
    """Mark `exc` as the final error of a call whose retries ran out: callers further up
    do not retry it again (that would multiply the time budget)."""
    exc.retries_exhausted = True  # type: ignore[attr-defined]
    return exc


def is_transient(exc: BaseException) -> bool:
    """True when trying again (after reconnecting if the connection broke) may succeed."""
    if getattr(exc, "retries_exhausted", False):
        return False
    if isinstance(exc, JetStreamApiError):
        return exc.err_code in TRANSIENT_API_ERRORS
    if isinstance(exc, (NoRespondersError, NatsTimeoutError, ConnectionLostError, ReadInterruptedError)):
        return True
    if isinstance(exc, ServerError):
        text = str(exc).lower()
        return any(t in text for t in _TRANSIENT_SERVER_ERRORS)
    if isinstance(exc, (socket.gaierror, ssl.SSLCertVerificationError)):
        return False  # an unknown host name, a certificate the server or we refuse
    if isinstance(exc, ssl.SSLError):
        return isinstance(exc, ssl.SSLEOFError)  # cut mid-handshake: the server went away
    return isinstance(exc, (ConnectionError, TimeoutError, OSError))


def breaks_connection(exc: BaseException) -> bool:
    """True when the connection cannot be used after `exc` (reconnect before the next attempt)."""
    return isinstance(exc, (ConnectionLostError, ServerError, OSError)) and not isinstance(
        exc, NatsTimeoutError
    )


@dataclass
class RetryBudget:
    """The retries of one call: backoff waits until `retry_timeout_s` has passed."""

    retry_timeout_s: float
    backoff_s: float
    backoff_max_s: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    rng: Callable[[], float] = random.random
    started: float = field(init=False)
    retries: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.started = self.clock()

    @classmethod
    def of(
        cls,
        options: ConnectionOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> RetryBudget:
        return cls(
            options.retry_timeout_s, options.retry_backoff_s, options.retry_backoff_max_s, clock, sleep, rng
        )

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float:
        return max(0.0, self.retry_timeout_s - self.elapsed)

    def next_delay(self) -> float:
        """The wait before the next retry: doubling from `backoff_s`, capped, with jitter."""
        base = min(self.backoff_max_s, self.backoff_s * (2 ** min(self.retries, 30)))
        return float(base * (1.0 - JITTER * self.rng()))

    def wait(self, what: str, exc: BaseException) -> bool:
        """Sleep before the next attempt; False (no sleep) when the budget does not allow one."""
        delay = self.next_delay()
        if self.elapsed + delay > self.retry_timeout_s:
            return False
        self.retries += 1
        level = logging.WARNING if self.retries == 1 else logging.INFO
        log.log(
            level,
            "%s: %s; retry %d in %.2fs (%.1fs left of retryTimeout=%gs)",
            what,
            exc,
            self.retries,
            delay,
            self.remaining(),
            self.retry_timeout_s,
        )
        self.sleep(delay)
        return True

    def progressed(self) -> None:
        """Something succeeded: the next failure starts a fresh budget."""
        self.started = self.clock()
        self.retries = 0

    def summary(self) -> str:
        """How long the call tried, for the final error."""
        return (
            f"gave up after {self.retries + 1} attempt{'s' if self.retries else ''} in "
            f"{self.elapsed:.1f}s (retryTimeout={self.retry_timeout_s:g}s)"
        )
