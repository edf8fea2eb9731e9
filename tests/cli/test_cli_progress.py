"""`jetstream_cli.progress`: the progress line on a fake terminal with an injected clock
(redraws throttled, rate and time left, the final line, cut to the terminal's width) and
its silence on anything that is not a terminal."""

from __future__ import annotations

import io

import pytest

from jetstream_cli.progress import BYTES, MESSAGES, ProgressLine, seconds_text


class FakeTerminal(io.StringIO):
    """What a terminal would receive; `isatty()` says yes."""

    def isatty(self) -> bool:
        return True

    def frames(self) -> list[str]:
        """Each drawing of the line (carriage return to carriage return), pads stripped."""
        return [f.rstrip(" \n") for f in self.getvalue().split("\r") if f]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1024.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def line(total: int, clock: FakeClock, stream: io.StringIO | None = None, **kwargs: object
         ) -> tuple[ProgressLine, io.StringIO]:
    out = stream if stream is not None else FakeTerminal()
    return ProgressLine("Sent", total, stream=out, clock=clock, columns=200, **kwargs), out  # type: ignore[arg-type]


def test_nothing_at_all_on_a_stream_that_is_not_a_terminal(clock: FakeClock) -> None:
    bar, out = line(100, clock, stream=io.StringIO())
    assert not bar.active
    for i in range(1, 101):
        clock.now += 1
        bar.update(i)
    bar.finish()
    assert out.getvalue() == ""
    assert bar.done == 100  # still counts: only the drawing is off


def test_nothing_when_disabled_even_on_a_terminal(clock: FakeClock) -> None:
    bar, out = line(100, clock, enabled=False)
    with bar:
        bar.advance(50)
    assert not bar.active and out.getvalue() == ""


def test_the_first_update_draws_at_once_then_at_most_one_redraw_per_interval(clock: FakeClock) -> None:
    bar, out = line(10_000, clock)
    for _ in range(1000):  # a burst within the same instant: one drawing
        bar.advance()
    assert len(out.frames()) == 1 and "1 / 10,000 msgs" in out.frames()[0]
    clock.now += 0.05
    bar.advance()
    assert len(out.frames()) == 1  # too soon
    clock.now += 0.06
    bar.advance()
    assert len(out.frames()) == 2 and "1,002 / 10,000 msgs" in out.frames()[1]
    for _ in range(50):  # 5 seconds of updates every 0.01 s: 10 drawings a second
        for _ in range(10):
            clock.now += 0.01
            bar.advance()
    assert 2 + 45 <= len(out.frames()) <= 2 + 50


def test_a_slower_interval_is_kept(clock: FakeClock) -> None:
    bar, out = line(100, clock, min_interval_s=1.0)
    for i in range(100):
        clock.now += 0.1
        bar.update(i)
    assert len(out.frames()) == 10


def test_rate_percent_and_time_left(clock: FakeClock) -> None:
    bar, out = line(1000, clock)
    clock.now += 2
    bar.update(500)
    assert out.frames()[-1] == "Sent [##########----------] 500 / 1,000 msgs  50% 250 msgs/s ETA 2.0s"
    clock.now += 8
    bar.update(600)  # 60/s on average over 10 s: 400 left take 6.7 s
    assert out.frames()[-1].endswith(" 60% 60 msgs/s ETA 6.7s")


def test_long_times_left(clock: FakeClock) -> None:
    bar, out = line(1_000_000, clock)
    clock.now += 10
    bar.update(1000)  # 100/s: 999,000 left take 9,990 s
    assert out.frames()[-1].endswith("ETA 2h46m")


def test_no_rate_yet_at_the_first_instant(clock: FakeClock) -> None:
    bar, out = line(10, clock)
    bar.update(0)
    assert out.frames() == ["Sent [--------------------] 0 / 10 msgs   0% - msgs/s ETA -"]


def test_bytes(clock: FakeClock) -> None:
    bar, out = line(4 * 1024 * 1024, clock, units=BYTES)
    clock.now += 1
    bar.update(1024 * 1024)
    assert out.frames()[-1] == "Sent [#####---------------] 1.0 MiB / 4.0 MiB  25% 1.0 MiB/s ETA 3.0s"


def test_an_unknown_total_shows_what_is_done_and_the_rate(clock: FakeClock) -> None:
    bar, out = line(0, clock)
    clock.now += 2
    bar.update(300)
    bar.finish()
    assert out.frames() == ["Sent 300 msgs 150 msgs/s", "Sent 300 msgs 150 msgs/s in 2.0s"]


def test_done_beyond_an_estimated_total_is_100_percent_and_nothing_left(clock: FakeClock) -> None:
    bar, out = line(100, clock)
    clock.now += 1
    bar.update(150)
    assert out.frames()[-1] == "Sent [####################] 150 / 100 msgs 100% 150 msgs/s ETA 0s"


def test_the_final_line_once_then_silence(clock: FakeClock) -> None:
    bar, out = line(1024, clock)
    with bar:
        for i in range(1, 1025):
            clock.now += 1 / 256  # exact in binary: 4 s in all
            bar.update(i)
    text = out.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1
    assert out.frames()[-1] == "Sent [####################] 1,024 / 1,024 msgs 100% 256 msgs/s in 4.0s"
    bar.update(5)
    bar.finish()
    assert out.getvalue() == text


def test_the_final_line_comes_even_when_throttled(clock: FakeClock) -> None:
    bar, out = line(3, clock)
    bar.update(1)
    bar.update(2)
    bar.update(3)  # same instant: not drawn...
    assert out.frames() == ["Sent [######--------------] 1 / 3 msgs  33% - msgs/s ETA -"]
    clock.now += 0.5
    bar.finish()  # ...but the final line shows it
    assert out.frames()[-1] == "Sent [####################] 3 / 3 msgs 100% 6 msgs/s in 0.5s"


def test_finish_with_done_ends_an_estimate_at_its_total(clock: FakeClock) -> None:
    bar, out = line(1000, clock, units=BYTES)
    clock.now += 1
    bar.update(800)
    bar.finish(done=1000)
    assert out.frames()[-1].startswith("Sent [####################] 1000 B / 1000 B 100%")


def test_an_error_ends_the_line_without_a_final_state(clock: FakeClock) -> None:
    bar, out = line(100, clock)
    with pytest.raises(RuntimeError), bar:
        bar.update(10)
        raise RuntimeError("server went away")
    assert out.getvalue().endswith("\n")
    assert [f for f in out.frames() if " in " in f] == []
    bar.update(20)
    assert out.getvalue().count("\r") == 1


def test_a_shorter_line_covers_the_longer_one_before(clock: FakeClock) -> None:
    bar, out = line(0, clock, units=BYTES)
    clock.now += 1
    bar.update(5 * 1024 * 1024)  # "5.0 MiB 5.0 MiB/s"
    clock.now += 9
    bar.update(5 * 1024 * 1024)  # "5.0 MiB 512 KiB/s": one character shorter
    first, second = out.getvalue().split("\r")[1:]
    assert len(second) == len(first)


def test_the_line_is_cut_to_the_terminal_width(clock: FakeClock) -> None:
    out = FakeTerminal()
    bar = ProgressLine("Backup A-STREAM-WITH-A-LONG-NAME", 1000, stream=out, clock=clock, columns=40)
    with bar:
        clock.now += 1
        bar.update(500)
    assert all(len(frame) <= 39 for frame in out.getvalue().replace("\n", "").split("\r"))


def test_messages_are_the_default_units(clock: FakeClock) -> None:
    assert ProgressLine("x", 1, stream=io.StringIO()).units is MESSAGES


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0.0s"), (-1, "0.0s"), (0.04, "0.0s"), (4.25, "4.2s"), (9.96, "10s"), (42.1, "43s"),
    (185, "3m05s"), (3600, "1h00m"), (7620, "2h07m"),
])
def test_seconds_text(seconds: float, text: str) -> None:
    assert seconds_text(seconds) == text
