"""Reading with read-only NATS rights (option readMode=direct): no consumer, by sequence.

The users are what an operator grants an analytics user (docs/permissions.md,
the blocks there are these): `viewer` may only ask for stream IN's info and
get its messages directly (`$JS.API.DIRECT.GET.IN`, batched on a stream with
allow_direct) or by message get; `getter` has only message get on stream
PLAIN (no allow_direct), `blind` only stream info. Both servers are started
with the same generated config file. Batch and streaming reads as `viewer`
return what the default (consumer) read returns for the admin, exactly once;
a user without a right gets one error naming it, at once, and nothing is
created on the server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import pytest

from jetstream_testing.process import ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.spark_matrix]

ConfigServer = Callable[..., ServerProcess]

# docs/permissions.md, "Read-only: no consumer" (the blocks there are these users)
CONFIG = """
authorization {
  users = [
    { user: admin, password: admin }
    { user: viewer, password: viewer, permissions: {
        publish: ["$JS.API.STREAM.INFO.IN", "$JS.API.DIRECT.GET.IN", "$JS.API.STREAM.MSG.GET.IN"]
        subscribe: "_INBOX.>"
      } }
    { user: getter, password: getter, permissions: {
        publish: ["$JS.API.STREAM.INFO.PLAIN", "$JS.API.STREAM.MSG.GET.PLAIN"]
        subscribe: "_INBOX.>"
      } }
    { user: blind, password: blind, permissions: {
        publish: ["$JS.API.STREAM.INFO.IN"]
        subscribe: "_INBOX.>"
      } }
  ]
}
"""


def read(spark: Any, url: str, user: str, stream: str, **options: str) -> Any:
    r = (spark.read.format("jetstream").option("servers", url).option("user", user).option("password", user)
         .option("stream", stream).option("requestTimeout", "5s"))
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((r.seq, r.subject, bytes(r.data), r.headers, r.timestamp) for r in df.collect())


@pytest.fixture
async def srv(config_server: ConfigServer) -> Any:
    proc = config_server(CONFIG)
    nc = await nats.connect(proc.url, user="admin", password="admin", max_reconnect_attempts=0)
    js = nc.jetstream()
    await js.add_stream(name="IN", subjects=["in.>"], allow_direct=True)
    await js.add_stream(name="PLAIN", subjects=["plain.>"])
    for i in range(30):
        await js.publish(f"in.{i % 3}", f"m{i}".encode(), headers={"K": str(i)} if i % 2 else None)
    for i in range(5):
        await js.publish("plain.x", f"p{i}".encode())
    yield proc, js
    await nc.close()


async def test_batch_reads_by_direct_get_equal_the_consumer_read(spark: Any, srv: Any) -> None:  # type: ignore[no-untyped-def]
    proc, js = srv
    full = rows(read(spark, proc.url, "admin", "IN"))
    assert len(full) == 30
    assert rows(read(spark, proc.url, "viewer", "IN", readMode="direct")) == full
    one = rows(read(spark, proc.url, "viewer", "IN", readMode="direct", subjects="in.1"))
    assert one == [r for r in full if r[1] == "in.1"]
    two = rows(read(spark, proc.url, "viewer", "IN", readMode="direct", subjects="in.0,in.2",
                    startingOffsets="5", endingOffsets="20"))
    assert two == [r for r in full if r[1] != "in.1" and 5 <= r[0] <= 20]
    at = full[9][4]  # the timestamp of seq 10: a start by time, resolved without a consumer
    since = rows(read(spark, proc.url, "viewer", "IN", readMode="direct",
                      startingTimestamp=str(int(at.timestamp() * 1000))))
    assert since[0][0] <= 10 and since[-1][0] == 30
    plain = rows(read(spark, proc.url, "getter", "PLAIN", readMode="direct"))  # no allow_direct: message gets
    assert [(r[0], r[2]) for r in plain] == [(i + 1, f"p{i}".encode()) for i in range(5)]
    assert (await js.stream_info("IN")).state.consumer_count == 0


async def test_streaming_by_direct_get_reads_each_message_once(  # type: ignore[no-untyped-def]
    spark: Any, srv: Any, tmp_path: Path
) -> None:
    proc, js = srv
    seen: dict[int, list[int]] = {}

    def sink(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        seen[batch_id] = [r.seq for r in df.select("seq").collect()]

    def run() -> None:
        query = (
            spark.readStream.format("jetstream").option("servers", proc.url).option("user", "viewer")
            .option("password", "viewer").option("stream", "IN").option("readMode", "direct").load()
            .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "c"))
            .trigger(availableNow=True).start()
        )
        query.awaitTermination(240)
        assert query.exception() is None

    run()
    for i in range(7):
        await js.publish("in.9", f"late{i}".encode())
    run()
    seqs = sorted(s for batch in seen.values() for s in batch)
    assert seqs == list(range(1, 38))
    assert (await js.stream_info("IN")).state.consumer_count == 0


async def test_a_missing_right_is_one_error_naming_it(spark: Any, srv: Any) -> None:  # type: ignore[no-untyped-def]
    proc, js = srv
    started = time.monotonic()
    with pytest.raises(Exception, match=r"Permissions Violation for Publish to .*\$JS\.API\.CONSUMER\.CREATE\.IN.*"
                       r"readMode=direct"):
        read(spark, proc.url, "viewer", "IN").collect()  # the default mode creates consumers
    with pytest.raises(Exception, match=r"Permissions Violation for Publish to .*\$JS\.API\.DIRECT\.GET\.IN"):
        read(spark, proc.url, "blind", "IN", readMode="direct").collect()
    with pytest.raises(Exception, match=r"Permissions Violation for Publish to .*\$JS\.API\.STREAM\.INFO\.PLAIN"):
        read(spark, proc.url, "viewer", "PLAIN", readMode="direct").collect()
    assert time.monotonic() - started < 60  # no retry loop, no wait for a reply that cannot come
    assert (await js.stream_info("IN")).state.consumer_count == 0


def test_direct_get_excludes_durable(spark: Any) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match="readMode=direct and durable exclude each other"):
        (spark.readStream.format("jetstream").option("stream", "IN").option("readMode", "direct")
         .option("durable", "d").load().writeStream.format("noop").start().awaitTermination(60))


def test_the_permissions_page_shows_these_users() -> None:
    """docs/permissions.md's blocks are what the servers of these tests run with."""
    import re

    from test_consumer_read import CONFIG as THROUGH_CONSUMER
    from test_limited_user import CONFIG as LIMITED

    page = (Path(__file__).resolve().parents[3] / "docs" / "permissions.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```\n(.*?)```", page, re.DOTALL)
    assert len(blocks) == 4

    def squash(text: str) -> str:
        return re.sub(r"\s+", "", text)

    for block in blocks:
        assert any(squash(block) in squash(config) for config in (CONFIG, LIMITED, THROUGH_CONSUMER)), block
