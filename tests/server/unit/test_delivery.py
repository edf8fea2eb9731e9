"""`DeliveryRun` and `digits_total` (jetstream/consumer/delivery.py): a run's frames and sizes.

A run of first deliveries must say exactly what `Consumer.commit` would give
each message in turn: its frames (read back with `run_frames.decoded`), the
ack replies in them, and the byte counts a pull's `max_bytes` is measured by
(worked out without building the replies) must equal those of the messages
one by one, on both store backends, across digit boundaries of every number
in the reply and with `num_pending` running out inside the run.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_frames import decoded

from jetstream_server.jetstream.consumer.delivery import DeliveryRun, digits_total
from jetstream_server.store import StreamStore

HDR = b"NATS/1.0\r\nNats-Msg-Id: m\r\n\r\n"
PREFIX = "$JS.ACK.S.C."


def _wire(subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> int:
    return len(subject.encode()) + len(reply or "") + len(headers or b"") + len(payload)


@given(st.integers(0, 10**6), st.integers(0, 2000))
def test_digits_total(low: int, span: int) -> None:
    assert digits_total(low, low + span) == sum(len(str(x)) for x in range(low, low + span + 1))
    assert digits_total(low + 1, low) == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(1, 40),
    first_dseq=st.sampled_from([1, 7, 95, 998, 99_990]),
    npc=st.integers(-1, 45),
    skip=st.sampled_from([1, 2, 3]),
    with_headers=st.sampled_from(["none", "all", "some"]),
    stamp=st.sampled_from([5, 999_999_990, 1_700_000_000_000_000_000]),
)
def test_run_frames_and_sizes_match_one_by_one(
    make_store: Callable[..., StreamStore],
    count: int, first_dseq: int, npc: int, skip: int, with_headers: str, stamp: int,
) -> None:
    store = make_store()
    for i in range(1, 3 * count + 1):
        headers = HDR if with_headers == "all" or (with_headers == "some" and i % 3 == 0) else None
        subject = "keep.é" if i % skip == 0 else "drop"
        store.store(subject, headers, b"p" * (i % 7), stamp + i)
    run = store.read_run(1, count, filters=["keep.*"])
    frames = DeliveryRun(run, PREFIX, first_dseq, npc, store.overhead)
    messages = decoded(frames)
    pending = npc
    for i, (subject, reply, headers, payload) in enumerate(messages):
        msg = run[i]
        pending = max(pending - 1, 0)
        assert reply == f"{PREFIX}1.{msg.seq}.{first_dseq + i}.{msg.timestamp_ns}.{pending}"
        assert (subject, headers, payload) == (msg.subject, msg.headers, msg.data)
    sizes = [_wire(*m) for m in messages]
    for k in range(len(sizes) + 1):
        assert frames.wire_bytes(k) == sum(sizes[:k])
    assert frames.wire_bytes() == sum(sizes)
    for room in (0, sizes[0] - 1, sizes[0], sum(sizes) // 2, sum(sizes) - 1, sum(sizes)):
        fit = 0
        while fit < len(sizes) and sum(sizes[: fit + 1]) <= room:
            fit += 1
        assert frames.fitting(room) == (fit, sum(sizes[:fit]))
    head = frames.head(len(messages) // 2)
    assert decoded(head) == messages[: len(messages) // 2]
    # a client that does not take headers gets the payloads alone
    assert [m[3] for m in decoded(frames, headers=False)] == [m[3] for m in messages]
