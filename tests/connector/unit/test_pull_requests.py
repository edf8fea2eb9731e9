"""`PullRequests`: the bookkeeping of a range read's pull requests in flight (oldest first) and
when the next one goes out (read/pull_requests.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spark_jetstream.read.pull_requests import PullRequests


def test_the_next_request_goes_out_at_half_a_batch_and_never_past_the_range() -> None:
    requests = PullRequests()
    assert requests.to_ask(100, 250) == 100  # nothing in flight: a whole batch
    requests.sent(100)
    requests.delivered(49)
    assert requests.to_ask(100, 150) == 0  # 51 still to come: not yet
    requests.delivered(1)
    assert requests.to_ask(100, 150) == 100  # half a batch to come: the next one goes out
    requests.sent(100)
    assert (requests.count, requests.outstanding) == (2, 150)
    assert requests.to_ask(100, 50) == 0  # never more than two in flight
    requests.delivered(60)  # the first is over, 10 of the second came
    assert (requests.count, requests.outstanding) == (1, 90)
    assert requests.to_ask(100, 50) == 0
    requests.delivered(40)
    assert requests.to_ask(100, 50) == 50  # only what is left of the range
    requests.sent(50)
    requests.delivered(100)
    assert (requests.count, requests.outstanding) == (0, 0)
    assert requests.to_ask(100, 0) == 100  # the range's count ran out (a filter's estimate): whole batches


def test_a_request_that_ends_early_or_is_refused_gives_back_what_it_did_not_bring() -> None:
    requests = PullRequests()
    assert requests.ended() == (0, 0) and requests.refused() == 0  # none in flight
    requests.sent(100)
    requests.delivered(60)
    requests.sent(80)
    assert requests.ended() == (100, 60)  # 409 max bytes: the oldest is over after 60
    assert requests.asked == 140  # its 40 not brought are to ask for again
    assert (requests.count, requests.outstanding) == (1, 80)
    requests.sent(30)
    assert requests.refused() == 30  # 408 Requests Pending: the newest never started
    requests.delivered(80)
    assert requests.count == 0
    requests.sent(10)
    assert requests.ended() == (10, 0)  # not even one message fitted


@given(st.lists(st.tuples(st.integers(1, 50), st.integers(0, 60)), min_size=1, max_size=30))
def test_deliveries_count_against_the_oldest_request_first(steps: list[tuple[int, int]]) -> None:
    requests, asked, brought = PullRequests(), 0, 0
    for ask, arrive in steps:
        requests.sent(ask)
        asked += ask
        arrive = min(arrive, asked - brought)
        requests.delivered(arrive)
        brought += arrive
        assert requests.outstanding == asked - brought and requests.asked == asked
        assert requests.count == 0 or requests.outstanding > 0
