"""The injected clock (core/clock.py): FakeClock's timers and its `run_off_loop`,
which runs a job inline and hands `done` its result or the exception it raised,
as LoopClock's disk thread does (tests/server/unit/test_engine.py runs that one)."""

from __future__ import annotations

from jetstream_server.core.clock import FakeClock


def test_run_off_loop_runs_the_job_and_done_before_returning() -> None:
    clock = FakeClock()
    results: list[object] = []
    clock.run_off_loop(lambda: 42, results.append)
    assert results == [42]


def test_run_off_loop_hands_a_failure_to_done() -> None:
    clock = FakeClock()
    results: list[object] = []

    def failing() -> None:
        raise OSError(28, "No space left on device")

    clock.run_off_loop(failing, results.append)
    assert len(results) == 1 and isinstance(results[0], OSError)


def test_timers_fire_in_due_order_and_cancelled_ones_never() -> None:
    clock = FakeClock()
    fired: list[str] = []
    clock.call_later(2, lambda: fired.append("b"))
    clock.call_later(1, lambda: fired.append("a"))
    clock.call_later(1.5, lambda: fired.append("x")).cancel()
    clock.advance(1)
    assert fired == ["a"]
    clock.advance(5)
    assert fired == ["a", "b"] and clock.pending_timers == 0
