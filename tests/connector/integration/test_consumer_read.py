"""Reading through an operator's pull consumer (option consumer) with Spark, as a user with only
the rights on that consumer, on both servers.

The users are what docs/permissions.md's "Read-only: through an operator's consumer" block grants
(`analyst`: consumer info, pull and ack on consumer FEED of stream IN, nothing else), and the same
minus one right each (`nonext`: no pull, `noack`: no ack, `noinfo`: no consumer info). Both
servers start with the same generated config file; `admin` makes the stream and the consumer, as
an operator would. A streaming AvailableNow query reads every message exactly once over two runs
and leaves the consumer acknowledged up to the end, unchanged otherwise; a user lacking a right
gets one error naming the subject; a consumer that cannot give exactly-once is refused naming
its setting; a batch read shows what the consumer would deliver next and acknowledges nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from jetstream_testing.process import ServerProcess
from spark_jetstream.spark_features import detect

pytestmark = [pytest.mark.spark]

ConfigServer = Callable[..., ServerProcess]

# docs/permissions.md, "Read-only: through an operator's consumer" (the analyst block there is this one)
CONFIG = """
authorization {
  users = [
    { user: admin, password: admin }
    { user: analyst, password: analyst, permissions: {
        publish: [
          "$JS.API.CONSUMER.INFO.IN.FEED", "$JS.API.CONSUMER.MSG.NEXT.IN.FEED", "$JS.ACK.IN.FEED.>"
        ]
        subscribe: "_INBOX.>"
      } }
    { user: nonext, password: nonext, permissions: {
        publish: ["$JS.API.CONSUMER.INFO.IN.FEED", "$JS.ACK.IN.FEED.>"]
        subscribe: "_INBOX.>"
      } }
    { user: noack, password: noack, permissions: {
        publish: ["$JS.API.CONSUMER.INFO.IN.FEED", "$JS.API.CONSUMER.MSG.NEXT.IN.FEED"]
        subscribe: "_INBOX.>"
      } }
    { user: noinfo, password: noinfo, permissions: {
        publish: ["$JS.API.CONSUMER.MSG.NEXT.IN.FEED", "$JS.ACK.IN.FEED.>"]
        subscribe: "_INBOX.>"
      } }
  ]
}
"""

ACK_WAIT_S = 5.0


@pytest.fixture
async def srv(config_server: ConfigServer) -> Any:
    proc = config_server(CONFIG)
    nc = await nats.connect(proc.url, user="admin", password="admin", max_reconnect_attempts=0)
    js = nc.jetstream()
    await js.add_stream(name="IN", subjects=["in.>"])
    for i in range(30):
        await js.publish(f"in.{i % 3}", f"m{i + 1}".encode(), headers={"K": str(i)} if i % 2 else None)
    await js.add_consumer("IN", ConsumerConfig(durable_name="FEED", ack_policy=AckPolicy.EXPLICIT, ack_wait=ACK_WAIT_S))
    yield proc, js
    await nc.close()


async def remake_feed(js: Any, **config: Any) -> ConsumerConfig:
    """The operator deletes FEED and makes it again with `config`."""
    await js.delete_consumer("IN", "FEED")
    made = ConsumerConfig(durable_name="FEED", ack_policy=AckPolicy.EXPLICIT, **config)
    await js.add_consumer("IN", made)
    return made


def source(spark: Any, url: str, user: str, *, stream: Any = None, fmt: str = "jetstream", **options: str) -> Any:
    r = (spark.readStream if stream is None else stream).format(fmt).option("servers", url)
    r = r.option("user", user).option("password", user).option("stream", "IN").option("consumer", "FEED")
    for key, value in {"requestTimeout": "5s", **options}.items():
        r = r.option(key, value)
    return r.load()


def run_available_now(spark: Any, url: str, user: str, checkpoint: Path, sink: Any, **options: str) -> None:
    query = (
        source(spark, url, user, **options).writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    )
    query.awaitTermination(240)
    assert query.exception() is None, query.exception()


@pytest.mark.spark_matrix
async def test_available_now_reads_each_message_once_with_only_the_consumer_rights(  # type: ignore[no-untyped-def]
    spark: Any, srv: Any, tmp_path: Path
) -> None:
    proc, js = srv
    before = (await js.consumer_info("IN", "FEED")).config
    seen: list[tuple[int, str, bytes]] = []
    batches: list[int] = []

    def sink(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        rows = [(r.seq, r.subject, bytes(r.data)) for r in df.collect()]
        if rows:
            batches.append(len(rows))
        seen.extend(rows)

    limits = detect().read_limits  # before Spark 4.2: no per-trigger limits, one micro-batch per run
    per_trigger = {"maxMessagesPerTrigger": "7"} if limits else {}
    run_available_now(spark, proc.url, "analyst", tmp_path / "c", sink, **per_trigger)
    for i in range(7):
        await js.publish("in.9", f"late{i}".encode())
    run_available_now(spark, proc.url, "analyst", tmp_path / "c", sink, **per_trigger)

    assert sorted(s for s, _, _ in seen) == list(range(1, 38))  # each message once
    assert sorted(seen)[:2] == [(1, "in.0", b"m1"), (2, "in.1", b"m2")]
    assert (max(batches) <= 7 and len(batches) >= 6) if limits else batches == [30, 7]
    info = await js.consumer_info("IN", "FEED")
    if not limits:
        # Spark 4.0/4.1 end an AvailableNow run without the call that acknowledges its last
        # micro-batch: handed back at stop, acknowledged (not read again) when the next run starts
        assert (info.ack_floor.stream_seq, info.num_ack_pending, info.num_pending) == (30, 7, 0)
        run_available_now(spark, proc.url, "analyst", tmp_path / "c", sink)
        assert len(seen) == 37
        info = await js.consumer_info("IN", "FEED")
    assert (info.ack_floor.stream_seq, info.num_ack_pending, info.num_pending) == (37, 0, 0)
    assert info.config == before  # never changed
    assert (await js.stream_info("IN")).state.consumer_count == 1  # nothing created


@pytest.mark.spark_matrix
async def test_a_missing_right_is_one_error_naming_it(spark: Any, srv: Any, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc, js = srv
    for user, subject in (
        ("nonext", r"\$JS\.API\.CONSUMER\.MSG\.NEXT\.IN\.FEED"),
        ("noack", r"\$JS\.ACK\.IN\.FEED\."),
        ("noinfo", r"\$JS\.API\.CONSUMER\.INFO\.IN\.FEED"),
    ):
        with pytest.raises(Exception, match=rf"Permissions Violation for Publish to .*{subject}"):
            run_available_now(spark, proc.url, user, tmp_path / user, lambda df, i: df.count())
    # nothing acknowledged: what `noack` pulled before its ack was refused falls due again
    assert (await js.consumer_info("IN", "FEED")).ack_floor.stream_seq == 0


async def test_a_push_consumer_is_refused_naming_its_deliver_subject(  # type: ignore[no-untyped-def]
    spark: Any, srv: Any, tmp_path: Path
) -> None:
    proc, js = srv
    await remake_feed(js, deliver_subject="push.feed")
    with pytest.raises(Exception, match=r"consumer 'FEED' on stream 'IN' \(option consumer\) has deliver_subject 'push.feed' "
                       r"\(a push consumer\)"):
        run_available_now(spark, proc.url, "analyst", tmp_path / "c", lambda df, i: df.count())


@pytest.mark.spark_matrix
async def test_a_batch_read_shows_what_comes_next_and_acknowledges_nothing(  # type: ignore[no-untyped-def]
    spark: Any, srv: Any
) -> None:
    proc, js = srv
    df = source(spark, proc.url, "analyst", stream=spark.read, endingOffsets="12")
    assert sorted(r.seq for r in df.collect()) == list(range(1, 13))
    assert sorted(r.seq for r in df.collect()) == list(range(1, 13))  # handed back: the same again
    # pending, but due again at once (-NAK), never acknowledged
    assert (await js.consumer_info("IN", "FEED")).ack_floor.stream_seq == 0


async def test_a_filter_changed_between_runs_is_refused_naming_it(  # type: ignore[no-untyped-def]
    spark: Any, srv: Any, tmp_path: Path
) -> None:
    proc, js = srv
    config = await remake_feed(js, filter_subject="in.0")
    seen: list[int] = []
    run_available_now(spark, proc.url, "analyst", tmp_path / "c", lambda df, i: seen.extend(r.seq for r in df.collect()))
    assert sorted(seen) == list(range(1, 31, 3))
    config.filter_subject = "in.1"  # the operator changes the filter (an update, allowed by the server)
    await js.add_consumer("IN", config)
    with pytest.raises(Exception, match=r"consumer 'FEED' on stream 'IN' \(option consumer\) has filter \['in.1'\] "
                       r"\(filter_subject / filter_subjects\), but when the query's checkpoint was written it was "
                       r"\['in.0'\]"):
        run_available_now(spark, proc.url, "analyst", tmp_path / "c", lambda df, i: df.count())


async def test_the_spark_4_0_path_reads_each_message_once(  # type: ignore[no-untyped-def]
    spark: Any, srv: Any, tmp_path: Path
) -> None:
    """The legacy stream reader (Spark 4.0/4.1: `latestOffset()` without arguments, Spark's
    AvailableNow wrapper: one micro-batch per run), driven on this Spark by a source claiming 4.0."""
    from test_spark_versions import SPARK_40, source_claiming

    spark.dataSource.register(source_claiming(SPARK_40, "jetstream_consumer_as_4_0"))
    proc, js = srv
    seen: list[int] = []

    def sink(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        seen.extend(r.seq for r in df.collect())

    def query(**trigger: Any) -> Any:
        return (source(spark, proc.url, "analyst", fmt="jetstream_consumer_as_4_0").writeStream.foreachBatch(sink)
                .option("checkpointLocation", str(tmp_path / "c")).trigger(**trigger).start())

    first = query(availableNow=True)
    first.awaitTermination(240)
    assert first.exception() is None, first.exception()
    assert sorted(seen) == list(range(1, 31))
    for i in range(5):
        await js.publish("in.9", f"late{i}".encode())
    running = query(processingTime="100 milliseconds")
    try:
        running.processAllAvailable()
    finally:
        running.stop()
    assert sorted(seen) == list(range(1, 36))  # each once
    info = await js.consumer_info("IN", "FEED")
    assert (info.ack_floor.stream_seq, info.num_pending) == (35, 0)


async def test_a_failed_batch_is_replayed_with_exactly_its_messages(  # type: ignore[no-untyped-def]
    spark: Any, srv: Any, tmp_path: Path
) -> None:
    """The query fails in batch 2 after the driver pulled it, before its commit; stopping hands
    the held messages back (-NAK, no wait for the ack wait). The restarted query replays batch 2
    with exactly the messages the failed attempt had, and reads the rest once."""
    proc, js = srv
    limits = detect().read_limits
    per_trigger = {"maxMessagesPerTrigger": "8"} if limits else {}
    fail_in = 2 if limits else 0
    attempts: dict[int, list[list[int]]] = {}
    done: list[int] = []

    def sink(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        rows = sorted(r.seq for r in df.collect())
        attempts.setdefault(batch_id, []).append(rows)
        if batch_id == fail_in and len(attempts[batch_id]) == 1:
            raise RuntimeError("the sink fails once")
        done.extend(rows)

    with pytest.raises(Exception, match="the sink fails once"):
        run_available_now(spark, proc.url, "analyst", tmp_path / "c", sink, **per_trigger)
    assert (await js.consumer_info("IN", "FEED")).ack_floor.stream_seq < 30
    run_available_now(spark, proc.url, "analyst", tmp_path / "c", sink, **per_trigger)
    failed, replayed = attempts[fail_in]
    assert failed == replayed and failed  # the planned range, whole
    assert sorted(done) == list(range(1, 31))  # each message once
