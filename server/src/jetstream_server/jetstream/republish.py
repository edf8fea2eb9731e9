"""Republish: a stored message published again on a mapped subject.

A stream with `republish {src, dest, headers_only}` publishes every message it
stores whose subject matches `src` once more, on `dest` mapped by the subject
transform, with nats-server's headers appended to the message's own:
`Nats-Stream`, `Nats-Subject`, `Nats-Sequence`, `Nats-Time-Stamp`,
`Nats-Last-Sequence` (the subject's previous sequence, 0 for its first
message) and, with `headers_only`, `Nats-Msg-Size` and no payload. This is
what KV watchers built on republish read.

Pure: `Republisher.target(subject)` says where (None: not republished) and
`message(...)` builds the headers; the stream decides when, the publish pipeline sends.
"""

from __future__ import annotations

from jetstream_server.core.gotime import rfc3339_ns
from jetstream_server.core.subjects import is_valid_publish_subject
from jetstream_server.jetstream.sourcing_config import RepublishConfig
from jetstream_server.jetstream.transform import SubjectTransform, TransformError

_STATUS_LINE = b"NATS/1.0\r\n"


class Republisher:
    """The republish of one stream config (see module docstring)."""

    __slots__ = ("stream", "headers_only", "_transform")

    def __init__(self, stream: str, config: RepublishConfig) -> None:
        self.stream = stream
        self.headers_only = config.headers_only
        try:
            self._transform: SubjectTransform | None = (
                SubjectTransform(config.src or ">", config.dest) if config.dest else None
            )
        except TransformError:  # refused when the config was checked; never republish then
            self._transform = None

    def target(self, subject: str) -> str | None:
        """The subject to republish a message stored on `subject` to, if any."""
        if self._transform is None:
            return None
        mapped = self._transform.match(subject)
        # like nats-server, a mapping that yields no valid subject suppresses the republish
        if mapped is None or not is_valid_publish_subject(mapped):
            return None
        return mapped

    def message(
        self, subject: str, seq: int, timestamp_ns: int, last_seq: int,
        headers: bytes | None, payload: bytes,
    ) -> tuple[bytes, bytes]:
        """(headers, payload) of the republished message."""
        added = (
            f"Nats-Stream: {self.stream}\r\nNats-Subject: {subject}\r\nNats-Sequence: {seq}\r\n"
            f"Nats-Time-Stamp: {rfc3339_ns(timestamp_ns)}\r\nNats-Last-Sequence: {last_seq}\r\n"
        ).encode()
        if self.headers_only:
            added += b"Nats-Msg-Size: %d\r\n" % len(payload)
        base = headers[:-2] if headers and headers.endswith(b"\r\n\r\n") else _STATUS_LINE
        return base + added + b"\r\n", b"" if self.headers_only else payload
