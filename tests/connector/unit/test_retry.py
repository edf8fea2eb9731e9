"""Retries (client/retry.py): the backoff schedule inside the total budget, driven by a fake
clock, and the one rule of what is worth retrying."""

from __future__ import annotations

import socket
import ssl

import pytest

from spark_jetstream.client import (
    ConnectionLostError,
    JetStreamApiError,
    JetStreamUnavailableError,
    NatsError,
    NatsTimeoutError,
    NoRespondersError,
    ReadInterruptedError,
    ServerError,
)
from spark_jetstream.client.retry import RetryBudget, breaks_connection, exhausted, is_transient
from spark_jetstream.options import ConnectionOptions


class FakeClock:
    """Time that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def budget(clock: FakeClock, jitter: float = 0.0, **options: str) -> RetryBudget:
    opts = ConnectionOptions.from_options(options)
    return RetryBudget.of(opts, clock=clock, sleep=clock.sleep, rng=lambda: jitter)


def test_waits_double_up_to_the_maximum_and_stop_at_the_total_timeout() -> None:
    clock = FakeClock()
    b = budget(clock, retryTimeout="10s", retryBackoff="100ms", retryBackoffMax="2s")
    while b.wait("call", ConnectionLostError("gone")):
        pass
    assert clock.sleeps[:6] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 2.0])
    assert set(clock.sleeps[5:]) == {2.0}
    # never past the budget: the wait that would end after 10 s is not taken
    assert sum(clock.sleeps) <= 10.0 and sum(clock.sleeps) + 2.0 > 10.0
    assert b.retries == len(clock.sleeps)
    assert b.summary() == f"gave up after {b.retries + 1} attempts in {sum(clock.sleeps):.1f}s (retryTimeout=10s)"


def test_jitter_only_shortens_a_wait() -> None:
    clock = FakeClock()
    b = budget(clock, jitter=1.0, retryBackoff="1s", retryBackoffMax="1s")
    assert b.next_delay() == pytest.approx(0.8)  # at most 20 % shorter
    assert budget(FakeClock(), jitter=0.0, retryBackoff="1s", retryBackoffMax="1s").next_delay() == 1.0


def test_zero_timeout_means_no_retry_and_progress_starts_a_fresh_budget() -> None:
    clock = FakeClock()
    assert not budget(clock, retryTimeout="0").wait("call", NatsTimeoutError("slow"))
    assert clock.sleeps == []
    b = budget(clock, retryTimeout="1s", retryBackoff="400ms", retryBackoffMax="400ms")
    assert b.wait("call", NatsTimeoutError("slow")) and b.wait("call", NatsTimeoutError("slow"))
    assert not b.wait("call", NatsTimeoutError("slow"))  # 0.8 s spent, 0.4 more would pass 1 s
    b.progressed()
    assert b.retries == 0 and b.wait("call", NatsTimeoutError("slow"))


def test_retries_are_logged_with_the_budget_left(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    b = budget(clock, retryTimeout="5s", retryBackoff="1s", retryBackoffMax="1s")
    with caplog.at_level("INFO", logger="spark_jetstream.client.retry"):
        b.wait("JetStream API $JS.API.STREAM.INFO.S", NoRespondersError("no responders for x"))
        b.wait("JetStream API $JS.API.STREAM.INFO.S", NoRespondersError("no responders for x"))
    first, second = caplog.records
    assert first.levelname == "WARNING" and second.levelname == "INFO"
    assert "no responders for x; retry 1 in 1.00s (5.0s left of retryTimeout=5s)" in first.getMessage()
    assert "retry 2 in 1.00s (4.0s left" in second.getMessage()


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionLostError("connection closed by nats://h:1"),
        NatsTimeoutError("no data in time"),
        NoRespondersError("no responders for $JS.API.INFO"),
        ReadInterruptedError("status 503"),
        JetStreamApiError("$JS.API.STREAM.INFO.S", 503, 10008, "JetStream system temporarily unavailable"),
        JetStreamApiError("$JS.API.STREAM.INFO.S", 500, 10009, "JetStream cluster can not handle request"),
        JetStreamApiError("$JS.API.STREAM.INFO.S", 500, 10118, "stream is offline"),
        ServerError("server error: Stale Connection"),
        ConnectionRefusedError(111, "Connection refused"),
        ConnectionResetError(104, "reset"),
        TimeoutError("timed out"),
        ssl.SSLEOFError(8, "EOF occurred in violation of protocol"),
    ],
    ids=repr,
)
def test_transient(exc: BaseException) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize(
    "exc",
    [
        JetStreamApiError("$JS.API.STREAM.INFO.S", 404, 10059, "stream not found"),
        JetStreamApiError("$JS.API.STREAM.INFO.S", 503, 10039, "JetStream not enabled for account"),
        ServerError("server error: Authorization Violation"),
        ServerError("server error: Permissions Violation for Publish to $JS.API.INFO"),
        NatsError("unexpected protocol line from server"),
        socket.gaierror(-2, "Name or service not known"),
        ssl.SSLCertVerificationError(1, "certificate verify failed"),
        ssl.SSLError(1, "tlsv13 alert certificate required"),
        exhausted(ConnectionLostError("could not connect; gave up after 3 attempts")),
        exhausted(JetStreamUnavailableError("no responders; gave up")),
    ],
    ids=repr,
)
def test_final(exc: BaseException) -> None:
    assert not is_transient(exc)


def test_which_errors_break_the_connection() -> None:
    assert breaks_connection(ConnectionLostError("closed")) and breaks_connection(ConnectionResetError())
    assert breaks_connection(ServerError("server error: Stale Connection"))
    assert not breaks_connection(NatsTimeoutError("slow"))  # a slow reply: the connection may be fine
    assert not breaks_connection(NoRespondersError("none")) and not breaks_connection(
        JetStreamApiError("s", 503, 10008, "unavailable")
    )
