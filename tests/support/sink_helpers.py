"""Helpers for the sink tests: create streams and read them back, synchronously.

Uses the lean client's JetStream API calls so Spark tests (synchronous) need
no event loop. Not collected by pytest (no `test_` prefix).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from spark_jetstream.client import ErrorCode, JetStreamApiError, LeanConnection
from spark_jetstream.client.frames import parse_headers as parse_header_block
from spark_jetstream.options import ConnectionOptions


@dataclass(frozen=True)
class StoredMsg:
    subject: str
    seq: int
    data: bytes
    headers: dict[str, list[str]]

    @property
    def msg_id(self) -> str | None:
        values = self.headers.get("Nats-Msg-Id")
        return values[0] if values else None


def connect(url: str) -> LeanConnection:
    return LeanConnection.connect(ConnectionOptions(servers=(url,)), read_timeout_s=10)


def create_stream(url: str, name: str, subjects: list[str], **config: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"name": name, "subjects": subjects, "storage": "file", **config}
    with connect(url) as conn:
        return conn.js_api(f"STREAM.CREATE.{name}", cfg)


def stream_info(url: str, name: str) -> dict[str, Any]:
    with connect(url) as conn:
        return conn.js_api(f"STREAM.INFO.{name}")


def read_stream(url: str, name: str) -> list[StoredMsg]:
    """Every message of the stream, in sequence order (MSG.GET one by one: small streams only)."""
    out: list[StoredMsg] = []
    with connect(url) as conn:
        state = conn.js_api(f"STREAM.INFO.{name}")["state"]
        first, last = int(state["first_seq"]), int(state["last_seq"])
        if int(state["messages"]) == 0:
            return out
        for seq in range(first, last + 1):
            try:
                reply = conn.js_api(f"STREAM.MSG.GET.{name}", {"seq": seq})
            except JetStreamApiError as exc:
                if exc.err_code == ErrorCode.MESSAGE_NOT_FOUND:  # deleted
                    continue
                raise
            msg = reply["message"]
            headers: dict[str, list[str]] = {}
            if msg.get("hdrs"):
                _, _, items = parse_header_block(base64.b64decode(msg["hdrs"]))
                for key, value in items:
                    headers.setdefault(key, []).append(value)
            out.append(
                StoredMsg(
                    subject=msg["subject"],
                    seq=int(msg["seq"]),
                    data=base64.b64decode(msg.get("data") or ""),
                    headers=headers,
                )
            )
    return out


def publish_acked(url: str, messages: list[tuple[str, bytes]]) -> None:
    """Publish (subject, data) pairs pipelined and wait for every pub ack (stored for sure)."""
    from spark_jetstream.write.publisher import Publisher

    with Publisher(ConnectionOptions(servers=(url,))) as pub:
        pub.publish_many(
            [s.encode() for s, _ in messages], [b"NATS/1.0\r\n\r\n"] * len(messages), [d for _, d in messages]
        )
        stats = pub.flush()
    assert stats.published == len(messages), stats


def read_all(url: str, name: str, timeout_s: float = 120.0) -> list[StoredMsg]:
    """Every message of the stream through one push consumer (ack none): for large streams.

    Stops when the stream's message count (at the call) is reached; fails after `timeout_s`.
    """
    import secrets
    import time

    out: list[StoredMsg] = []
    with connect(url) as conn:
        want = int(conn.js_api(f"STREAM.INFO.{name}")["state"]["messages"])
        if want == 0:
            return out
        inbox = f"_INBOX.readall.{secrets.token_hex(8)}"
        sid = conn.subscribe(inbox)
        conn.js_api(
            f"CONSUMER.CREATE.{name}",
            {"stream_name": name, "config": {"deliver_subject": inbox, "ack_policy": "none",
                                             "deliver_policy": "all", "inactive_threshold": 60 * 10**9}},
        )
        deadline = time.monotonic() + timeout_s
        while len(out) < want:
            assert time.monotonic() < deadline, f"read {len(out)} of {want} messages of {name}"
            for op, subject, fsid, reply, hdr, payload in conn.read_frames():
                if op != b"MSG" or fsid != sid or not reply.startswith(b"$JS.ACK."):
                    continue  # heartbeats and flow control carry no ack subject
                headers: dict[str, list[str]] = {}
                if hdr:
                    _, _, items = parse_header_block(hdr)
                    for key, value in items:
                        headers.setdefault(key, []).append(value)
                tokens = reply.split(b".")  # $JS.ACK.<stream>.<consumer>.<n>.<sseq>.<cseq>.<ts>.<pending>
                seq = int(tokens[5]) if len(tokens) == 9 else int(tokens[7])  # or with domain, hash
                out.append(StoredMsg(subject=subject.decode(), seq=seq, data=payload, headers=headers))
    return out
