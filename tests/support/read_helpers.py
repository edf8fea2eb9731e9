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


def fill_fast(
    url: str, stream: str, subject: str, n: int, payload: bytes = b"x" * 128, *, create: bool = True,
    stream_subjects: tuple[str, ...] = (),
) -> None:
    """Create `stream` on `subject` (or `stream_subjects`; unless not `create`) and publish n
    messages to `subject` with pipelined, awaited acks."""
    from spark_jetstream.client import LeanConnection
    from spark_jetstream.options import ConnectionOptions

    with LeanConnection.connect(ConnectionOptions.from_options({"servers": url})) as conn:
        if create:
            conn.js_api(f"STREAM.CREATE.{stream}", {"name": stream, "subjects": list(stream_subjects or (subject,))})
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


class BurstPublisher:
    """A thread publishing core messages in bursts of ten, a random pause (mean `pause_s`)
    between bursts (the default: about 10,000 messages a second), until stopped.

    `start()`, then `stop()` (joins and raises what the thread raised). Bounded:
    at most 2M messages.
    """

    def __init__(self, url: str, subject: str, seed: int, pause_s: float = 0.001) -> None:
        self.pause_s = pause_s
        import random
        import threading

        self.url, self.subject = url, subject
        self.rng = random.Random(seed)
        self.stop_now = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> BurstPublisher:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stop_now.set()
        self.thread.join(30)
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        from spark_jetstream.client import LeanConnection
        from spark_jetstream.options import ConnectionOptions

        try:
            with LeanConnection.connect(ConnectionOptions(servers=(self.url,))) as conn:
                burst = LeanConnection.pub_frame(self.subject, b"x" * 32) * 10
                for _ in range(200_000):
                    if self.stop_now.wait(self.rng.uniform(0.5, 1.5) * self.pause_s):
                        break
                    conn.send(burst)
                conn.flush(10)
        except BaseException as exc:  # raised again by stop()
            self.error = exc
