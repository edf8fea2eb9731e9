"""JSON views the API answers with: stream state and info, stored messages, paging limits.

Pure functions over streams and messages; no subscriptions, no publishing.
"""

from __future__ import annotations

import base64
from typing import Any

from jetstream_server.core.gotime import rfc3339_ns
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.subject_match import subjects_overlap
from jetstream_server.store.base import StoredMessage

STREAM_NAMES_LIMIT = 1024
STREAM_LIST_LIMIT = 256
SUBJECTS_INFO_LIMIT = 100_000


def stream_state(
    stream: Stream, subjects: object = None, deleted_details: bool = False
) -> dict[str, Any]:
    """A stream's state as STREAM.INFO answers it; `subjects` (a subject -> count
    mapping, or what stands for it) goes where nats-server puts it."""
    st = stream.store.state()
    empty_fresh = st.msgs == 0 and st.last_seq == 0
    out: dict[str, Any] = {
        "messages": st.msgs,
        "bytes": st.bytes,
        "first_seq": 0 if empty_fresh else st.first_seq,
        "first_ts": rfc3339_ns(st.first_ts_ns if st.msgs else 0),
        "last_seq": st.last_seq,
        "last_ts": rfc3339_ns(st.last_ts_ns if st.last_seq else 0),
    }
    if st.num_subjects:
        out["num_subjects"] = st.num_subjects
    if subjects:
        out["subjects"] = subjects
    if st.num_deleted:
        if deleted_details:
            out["deleted"] = stream.store.deleted()
        out["num_deleted"] = st.num_deleted
    lost = stream.store.recovery
    if lost.lost_seqs:
        # nats-server's LostStreamData: what recovery found damaged and dropped
        out["lost"] = {"msgs": lost.lost_seqs, "bytes": lost.lost_bytes}
    out["consumer_count"] = len(stream.consumers)
    return out


def stream_info(
    stream: Stream, now_ns: int, subjects: object = None, deleted_details: bool = False
) -> dict[str, Any]:
    out = {
        "config": stream.config.to_json(),
        "created": rfc3339_ns(stream.created_ns),
        "state": stream_state(stream, subjects, deleted_details),
    }
    if stream.sourcing_info is not None:
        out.update(stream.sourcing_info())  # `mirror` / `sources`, with their lag
    out["ts"] = rfc3339_ns(now_ns)
    return out


def stored_message_json(msg: StoredMessage) -> dict[str, Any]:
    """A message as STREAM.MSG.GET answers it (base64 headers and data)."""
    out: dict[str, Any] = {"subject": msg.subject, "seq": msg.seq}
    if msg.headers:
        out["hdrs"] = base64.b64encode(msg.headers).decode()
    if msg.data:
        out["data"] = base64.b64encode(msg.data).decode()
    out["time"] = rfc3339_ns(msg.timestamp_ns)
    return out


def stream_matches_subject(stream: Stream, subject: str) -> bool:
    """STREAM.NAMES/LIST `subject` filter: any stream subject that collides with it."""
    return any(subjects_overlap(mine, subject) for mine in stream.config.subjects)
