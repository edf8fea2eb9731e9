"""Helpers for the read-side Spark tests: fill streams with nats-py, read with Spark.

Streams are filled through a real nats-py JetStream context (every publish
acknowledged), so the source is tested against what a normal client wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nats.js import JetStreamContext


async def fill(
    js: JetStreamContext,
    stream: str,
    messages: Iterable[tuple[str, bytes] | tuple[str, bytes, dict[str, Any] | None]],
    subjects: Sequence[str] = (),
    **config: Any,
) -> list[int]:
    """Create `stream` (if `subjects` given) and publish; return the stream sequences."""
    if subjects:
        await js.add_stream(name=stream, subjects=list(subjects), **config)
    seqs = []
    for item in messages:
        subject, data = item[0], item[1]
        headers = item[2] if len(item) > 2 else None  # type: ignore[misc]
        ack = await js.publish(subject, data, headers=headers)
        seqs.append(ack.seq)
    return seqs


def reader(spark: Any, url: str, stream: str, **options: Any) -> Any:
    r = spark.read.format("jetstream").option("servers", url).option("stream", stream)
    for key, value in options.items():
        r = r.option(key, str(value))
    return r.load()


def stream_reader(spark: Any, url: str, stream: str, **options: Any) -> Any:
    r = spark.readStream.format("jetstream").option("servers", url).option("stream", stream)
    for key, value in options.items():
        r = r.option(key, str(value))
    return r.load()


def rows(df: Any, *cols: str) -> list[tuple[Any, ...]]:
    """Selected columns as sorted tuples (order-insensitive comparison)."""
    return sorted(tuple(r) for r in df.select(*cols).collect())


def fill_fast(url: str, stream: str, subject: str, n: int, payload: bytes = b"x" * 128) -> None:
    """Create `stream` on `subject` and publish n messages with pipelined, awaited acks."""
    from spark_jetstream.client import LeanConnection
    from spark_jetstream.options import ConnectionOptions

    with LeanConnection.connect(ConnectionOptions.from_options({"servers": url})) as conn:
        conn.js_api(f"STREAM.CREATE.{stream}", {"name": stream, "subjects": [subject]})
        reply = conn.new_reply()
        frame = LeanConnection.pub_frame(subject, payload, reply=reply)
        sent = 0
        while sent < n:
            k = min(2000, n - sent)
            conn.send(frame * k)
            acked = 0
            while acked < k:
                for f in conn.read_frames():
                    if f[0] == b"MSG" and f[1] == reply.encode():
                        assert b'"error"' not in f[5], f[5]
                        acked += 1
            sent += k
