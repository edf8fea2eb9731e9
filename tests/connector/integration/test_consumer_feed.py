"""Reading through an operator's pull consumer (read/consumer_feed.py), driven without Spark, on both servers.

A driver's feed plans batches by pulling, acknowledges them only at commit, and a
new feed (a restarted driver, its memory gone) gets back exactly what the crashed
one held: a replayed range comes back whole (redeliveries of messages past it
are kept for the next batch), messages at or below the committed offset whose
acks were lost are acknowledged and dropped, and what the stream removed
meanwhile shows as fewer messages than the batch held. The consumers are made
with a short ack wait, as an operator might; what the feed waits for is the
server's redelivery timer (bounded by it, never a sleep of the test's own).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from read_helpers import fill

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import LeanConnection
from spark_jetstream.options import ConnectionOptions, ReadOptions
from spark_jetstream.read.consumer_check import ConsumerRefusedError
from spark_jetstream.read.consumer_feed import ConsumerFeed

ACK_WAIT_S = 1.0
BIG = 1 << 30


@pytest.fixture
def conn(server: ServerProcess) -> Iterator[LeanConnection]:
    with LeanConnection.connect(ConnectionOptions.from_options({"servers": server.url})) as c:
        yield c


def feed(conn: LeanConnection, consumer: str = "C", **opts: str) -> ConsumerFeed:
    options = ReadOptions.from_options({"servers": "nats://x:1", "stream": "S", "consumer": consumer, **opts},
                                       streaming=True)
    return ConsumerFeed(options, lambda fn: fn(conn))


async def setup(js: Any, n: int, **consumer: Any) -> None:
    await fill(js, "S", [(f"s.{i % 3}", f"m{i + 1}".encode(), {"K": str(i)} if i % 2 else None) for i in range(n)],
               subjects=["s.>"])
    config = {"durable_name": "C", "ack_policy": AckPolicy.EXPLICIT, "ack_wait": ACK_WAIT_S, **consumer}
    await js.add_consumer("S", ConsumerConfig(**config))


def seqs(msgs: Any) -> list[int]:
    return [m.seq for m in msgs]


async def info(js: Any) -> Any:
    return await js.consumer_info("S", "C")


async def test_batches_are_pulled_planned_and_acknowledged_at_commit(server: ServerProcess, js, conn) -> None:  # type: ignore[no-untyped-def]
    await setup(js, 25)
    f = feed(conn)
    assert f.start() == 0
    end, count = f.plan(0, 10, BIG)
    assert (end, count) == (10, 10)
    msgs = f.batch(0, 10, 10)
    assert seqs(msgs) == list(range(1, 11))
    assert [m.data for m in msgs[:2]] == [b"m1", b"m2"] and msgs[1].headers.startswith(b"NATS/1.0")
    assert (await info(js)).ack_floor.stream_seq == 0  # nothing acked before the commit
    assert f.plan(10, 10, BIG) == (20, 10)  # batch 1 committed: acked first
    assert (await info(js)).ack_floor.stream_seq == 10
    f.commit(20)
    state = await info(js)
    assert (state.ack_floor.stream_seq, state.num_ack_pending) == (20, 0)
    assert f.plan(20, 10, BIG) == (25, 5)
    assert f.plan(25, 10, BIG) == (25, 0)  # nothing new: the same offset
    f.release()


async def test_a_replayed_range_comes_back_whole_after_a_restart(server: ServerProcess, js, conn) -> None:  # type: ignore[no-untyped-def]
    await setup(js, 30)
    crashed = feed(conn)
    crashed.plan(0, 10, BIG)
    crashed.plan(10, 5, BIG)  # batch (10, 15] is in Spark's offset log, (0, 10] committed
    crashed.plan(10, 10, BIG)  # asked again for the same start: pulled up to 20
    # the driver dies: nothing acked beyond 10
    again = feed(conn)
    msgs = again.batch(10, 15, 5)  # Spark replays the logged batch
    assert seqs(msgs) == list(range(11, 16))
    assert msgs[0].deliveries == 2
    # what the crashed run held past the batch came back with it: kept for the next batch,
    # read without waiting for the ack wait again
    assert again.plan(15, 100, BIG) == (30, 15)
    again.commit(30)
    state = await info(js)
    assert (state.ack_floor.stream_seq, state.num_ack_pending) == (30, 0)


async def test_redeliveries_at_or_below_the_committed_offset_are_acknowledged_not_read(  # type: ignore[no-untyped-def]
    server: ServerProcess, js, conn
) -> None:
    await setup(js, 20)
    crashed = feed(conn)
    crashed.plan(0, 10, BIG)
    # Spark committed (0, 10]; the driver died before acking it
    again = feed(conn)
    assert again.plan(10, 100, BIG) == (20, 10)
    assert seqs(again.batch(10, 20, 10)) == list(range(11, 21))
    assert (await info(js)).ack_floor.stream_seq == 10


async def test_ack_policy_all_acknowledges_a_batch_with_one_ack(server: ServerProcess, js, conn) -> None:  # type: ignore[no-untyped-def]
    await setup(js, 12, ack_policy=AckPolicy.ALL)
    f = feed(conn)
    assert f.plan(0, 5, BIG) == (5, 5)
    f.commit(5)
    assert (await info(js)).ack_floor.stream_seq == 5
    assert f.plan(5, 100, BIG) == (12, 7)
    f.commit(12)
    state = await info(js)
    assert (state.ack_floor.stream_seq, state.num_ack_pending) == (12, 0)


async def test_what_the_stream_lost_meanwhile_is_missing_from_the_replay(server: ServerProcess, js, conn) -> None:  # type: ignore[no-untyped-def]
    await setup(js, 10)
    crashed = feed(conn)
    assert crashed.plan(0, 10, BIG) == (10, 10)
    await js.purge_stream("S", seq=5)  # 1..4 gone before the restart
    again = feed(conn)
    assert seqs(again.batch(0, 10, 10)) == list(range(5, 11))


async def test_max_ack_pending_holds_a_batch_to_it(server: ServerProcess, js, conn) -> None:  # type: ignore[no-untyped-def]
    await setup(js, 20, max_ack_pending=4)
    f = feed(conn)
    assert f.plan(0, 100, BIG) == (4, 4)
    assert f.plan(4, 100, BIG) == (8, 4)


async def test_a_byte_bound_takes_at_least_one_message(server: ServerProcess, js, conn) -> None:  # type: ignore[no-untyped-def]
    await setup(js, 6)
    f = feed(conn)
    assert f.plan(0, 100, 1) == (1, 1)
    end, count = f.plan(1, 100, 40)
    assert 2 <= end < 6 and count == end - 1


async def test_a_stopped_run_hands_back_what_it_held(server: ServerProcess, js, conn) -> None:  # type: ignore[no-untyped-def]
    await setup(js, 10, ack_wait=60.0)  # a restart would wait a minute for these
    first = feed(conn)
    first.plan(0, 10, BIG)
    first.release()  # -NAK: due again at once
    assert seqs(feed(conn).batch(0, 10, 10)) == list(range(1, 11))


async def test_available_now_reads_what_the_consumer_held_at_its_start(server: ServerProcess, js, conn) -> None:  # type: ignore[no-untyped-def]
    await setup(js, 8)
    f = feed(conn)
    f.pin()
    await fill(js, "S", [("s.9", b"late")])
    assert f.plan(0, 5, BIG) == (5, 5)
    assert f.plan(5, 5, BIG) == (8, 3)
    assert f.plan(8, 5, BIG) == (8, 0)  # the late message waits for the next run
    f.release()


async def test_a_batch_read_shows_what_is_next_and_acknowledges_nothing(  # type: ignore[no-untyped-def]
    server: ServerProcess, js, conn
) -> None:
    await setup(js, 12, ack_wait=60.0)
    assert seqs(feed(conn).peek(None, None, 100, BIG)) == list(range(1, 13))
    assert seqs(feed(conn).peek(7, None, 100, BIG)) == list(range(1, 8))  # handed back: shown again
    state = await info(js)
    assert state.ack_floor.stream_seq == 0
    with pytest.raises(ValueError, match=r"at most 5 messages .* endingOffsets"):
        feed(conn).peek(None, None, 5, BIG)
    f = feed(conn)  # a query after them: nothing to wait for
    assert f.plan(0, 100, BIG) == (12, 12)


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ({"deliver_subject": "push.here"}, r"deliver_subject 'push.here' \(a push consumer\)"),
        ({"ack_policy": AckPolicy.NONE}, r"ack_policy 'none'.*explicit or all"),
        ({"max_deliver": 5}, r"max_deliver 5.*-1"),
        ({"headers_only": True}, r"headers_only true"),
        ({"filter_subject": "s.1"}, r"filter \['s.1'\].*option subjects asks for \['s.2'\]"),
        ({"durable_name": None, "name": "C", "inactive_threshold": 60.0}, r"no durable_name"),
    ],
)
async def test_a_consumer_that_cannot_give_exactly_once_is_refused_naming_the_setting(  # type: ignore[no-untyped-def]
    server: ServerProcess, js, conn, config: dict[str, Any], error: str
) -> None:
    await fill(js, "S", [("s.1", b"x")], subjects=["s.>"])
    full = {"durable_name": "C", "ack_policy": AckPolicy.EXPLICIT, "deliver_policy": DeliverPolicy.ALL, **config}
    await js.add_consumer("S", ConsumerConfig(**full))
    options = {"subjects": "s.2"} if "filter_subject" in config else {}
    with pytest.raises(ConsumerRefusedError, match=error):
        feed(conn, **options).start()
    with pytest.raises(ConsumerRefusedError, match=r"consumer 'NOPE' on stream 'S' not found"):
        feed(conn, "NOPE").start()
