"""Which stream captures a subject: the question behind a publish's "no responders".

A JetStream publish answered with status 503 (no responders) means nobody
subscribes to the subject. On a single server that is final: no stream
captures it. On a cluster it is also what a publish gets while the stream's
leader is being elected (only the leader subscribes to the stream's
subjects), a few seconds at most, and worth a retry. `capturing_stream` asks
the JetStream API (`STREAM.NAMES` with a `subject` filter, answered by the
meta leader, retried through its own elections) which stream captures the
subject, so the publisher can tell the two apart.
"""

from __future__ import annotations

from spark_jetstream.client.connection import LeanConnection
from spark_jetstream.client.pool import connect
from spark_jetstream.options.connection import ConnectionOptions


def stream_names(conn: LeanConnection, subject: str) -> list[str]:
    """The streams whose subjects overlap `subject` (one page: at most 1024 names)."""
    reply = conn.js_api("STREAM.NAMES", {"subject": subject})
    return [str(name) for name in reply.get("streams") or []]


def capturing_stream(options: ConnectionOptions, subject: str) -> str | None:
    """The stream that captures `subject`, or None; on a pooled connection of its own
    (the caller's connection may be in the middle of reading pub acks)."""
    with connect(options) as conn:
        names = stream_names(conn, subject)
    return names[0] if names else None
