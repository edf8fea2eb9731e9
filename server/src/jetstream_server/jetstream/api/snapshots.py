"""Snapshot API handlers: STREAM.SNAPSHOT and STREAM.RESTORE (nats-server 2.15's).

SNAPSHOT: `{"deliver_subject", "no_consumers", "chunk_size", "window_size",
"jsck"}`; answered with `{"config", "state"}`, then the snapshot goes to the
deliver subject in chunks (snapshot/sender.py). RESTORE: `{"config", "state"}`;
answered with `{"deliver_subject"}` where the client uploads the snapshot
(snapshot/restore.py); a name already in use is 10130, as nats-server, which
also checks the config before any data comes. Checks in nats-server's order
(jetstream_api.go `jsStreamSnapshotRequest` / `jsStreamRestoreRequest`).
"""

from __future__ import annotations

import secrets
from typing import Any

from jetstream_server.core.subjects import is_valid_publish_subject
from jetstream_server.jetstream.api import views
from jetstream_server.jetstream.api.host import ApiHost, lookup_stream
from jetstream_server.jetstream.api.request import (
    RESTORE_FIELDS,
    SNAPSHOT_FIELDS,
    ApiRequest,
    int_field,
    is_empty_request,
    request_body,
)
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.snapshot.content import SnapshotContent
from jetstream_server.jetstream.snapshot.restore import RestoreSession
from jetstream_server.jetstream.snapshot.sender import SnapshotSender
from jetstream_server.jetstream.stream_config import StreamConfig


def stream_snapshot(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    if is_empty_request(req.payload):
        raise ApiError(Err.BAD_REQUEST)
    stream = lookup_stream(host, req.params[0])
    body = request_body(req, SNAPSHOT_FIELDS)
    deliver = body.get("deliver_subject") or ""
    if not isinstance(deliver, str) or not is_valid_publish_subject(deliver):
        raise ApiError(Err.SNAPSHOT_DELIVER_SUBJECT_INVALID)
    chunk_size = int_field(body, "chunk_size")
    window_size = int_field(body, "window_size")
    content = SnapshotContent(stream, not body.get("no_consumers"), host.clock.now_ns())
    sender = SnapshotSender(host.consumer_host, stream.name, content, deliver,
                            chunk_size, window_size, host.transfers)
    sender.start()  # its first turn runs after this answer has gone out
    return {"config": stream.config.to_json(), "state": views.stream_state(stream)}


def stream_restore(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    if is_empty_request(req.payload):
        raise ApiError(Err.BAD_REQUEST)
    body = request_body(req, RESTORE_FIELDS)
    name = req.params[0]
    raw = body.get("config")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ApiError(Err.INVALID_JSON, err="field 'config' must be an object")
    raw = dict(raw)
    if not raw.get("name"):
        raw["name"] = name
    if raw["name"] != name:
        raise ApiError(Err.STREAM_MISMATCH)
    if "/" in name or "\\" in name:
        raise ApiError(Err.STREAM_NAME_CONTAINS_PATH_SEPARATORS)
    config = StreamConfig.from_json(raw)
    config = host.prepare_config(config.within(host.settings.limits,
                                               window_given=bool(raw.get("duplicate_window"))))
    host.store_limits.check_reservation(config)
    if name in host.streams:
        raise ApiError(Err.STREAM_NAME_EXIST_RESTORE_FAILED)
    store, staging = host.stage_restore(config)
    deliver = f"$JS.SNAPSHOT.RESTORE.{name}.{secrets.token_hex(11)}"
    session = RestoreSession(host.consumer_host, config, store, staging, deliver,
                             host.adopt_restored, host.store_limits.check_restore_room,
                             host.transfers)
    session.start()
    return {"deliver_subject": deliver}
