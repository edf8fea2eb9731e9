"""The connector as a permission-limited user: exactly the permissions docs/security.md lists.

A reader may only read stream IN (its own ephemeral consumers, message get
and stream info) and a writer may only publish to out.> and look up stream
OUT; both servers are started with the same config file. A batch read and a
batch write go through; a read of another stream fails with the server's
permission violation, and nothing else was touched.
"""

from __future__ import annotations

from collections.abc import Callable

import nats
import pytest

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.spark

ConfigServer = Callable[..., ServerProcess]

# docs/security.md's "Permissions the connector needs" block (its user names and passwords
# replaced by test ones).
CONFIG = """
authorization {
  users = [
    { user: admin, password: admin }
    { user: reader, password: reader, permissions: {
        publish: [
          "$JS.API.STREAM.INFO.IN", "$JS.API.STREAM.MSG.GET.IN",
          "$JS.API.CONSUMER.CREATE.IN.>", "$JS.API.CONSUMER.MSG.NEXT.IN.>",
          "$JS.API.CONSUMER.DELETE.IN.>"
        ]
        subscribe: "_INBOX.>"
      } }
    { user: writer, password: writer, permissions: {
        publish: ["out.>", "$JS.API.STREAM.INFO.OUT", "$JS.API.STREAM.NAMES"]
        subscribe: "_INBOX.>"
      } }
  ]
}
"""


async def test_reads_and_writes_as_limited_users(spark, config_server: ConfigServer) -> None:  # type: ignore[no-untyped-def]
    srv = config_server(CONFIG)
    nc = await nats.connect(srv.url, user="admin", password="admin", max_reconnect_attempts=0)
    try:
        js = nc.jetstream()
        await js.add_stream(name="IN", subjects=["in.>"])
        await js.add_stream(name="OUT", subjects=["out.>"], duplicate_window=3600)
        await js.add_stream(name="SECRET", subjects=["secret.>"])
        for i in range(20):
            await js.publish(f"in.{i % 2}", f"m{i}".encode())
        await js.publish("secret.x", b"nope")

        def source(stream: str):  # type: ignore[no-untyped-def]
            return (
                spark.read.format("jetstream").option("servers", srv.url)
                .option("user", "reader").option("password", "reader")
                .option("stream", stream).load()
            )

        df = source("IN")
        assert sorted(r.seq for r in df.select("seq").collect()) == list(range(1, 21))
        (
            df.selectExpr("concat('out.', subject) AS subject", "data", "stream", "seq")
            .write.format("jetstream").option("servers", srv.url)
            .option("user", "writer").option("password", "writer")
            .option("stream", "OUT").mode("append").save()
        )
        out = await js.stream_info("OUT")
        assert out.state.messages == 20
        assert (await js.get_msg("OUT", 1)).subject == "out.in.0"

        with pytest.raises(Exception, match="(?i)permissions violation|timed out|timeout"):
            source("SECRET").collect()
        assert (await js.stream_info("SECRET")).state.consumer_count == 0
    finally:
        await nc.close()
