"""Stream API handlers: CREATE, UPDATE, INFO, LIST, NAMES, DELETE, PURGE, MSG.GET, MSG.DELETE.

Each handler decodes its body with `request_body`, acts on the engine and
returns the response body without `type` (the dispatcher adds it). Errors are
raised as `ApiError` with nats-server's codes; shapes follow the real server
(recorded in tests/test_streams_api.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jetstream_server.jetstream.api.common import (
    STREAM_LIST_LIMIT,
    STREAM_NAMES_LIMIT,
    SUBJECTS_INFO_LIMIT,
    offset_of,
    request_body,
    stored_message_json,
    str_field,
    stream_info,
    stream_matches_subject,
    uint_field,
)
from jetstream_server.jetstream.api.registry import ApiRequest, api_handler
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.stream_config import StreamConfig, validate_stream_name

if TYPE_CHECKING:
    from jetstream_server.jetstream.engine import JetStream


def _config_from_request(req: ApiRequest) -> StreamConfig:
    body = request_body(req)
    name = req.params[0]
    if body.get("name", "") != name:
        if not body.get("name"):
            validate_stream_name(name)
        raise ApiError(Err.STREAM_MISMATCH)
    return StreamConfig.from_json(body)


@api_handler("STREAM.CREATE.*", "stream_create")
def stream_create(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    config = _config_from_request(req)
    if config.sealed:
        raise ApiError(Err.STREAM_INVALID_CONFIG, err="stream configuration for create can not be sealed")
    existing = engine.streams.get(config.name)
    if existing is not None:
        if not existing.config.same_as(config):
            raise ApiError(Err.STREAM_NAME_EXIST)
        stream = existing
    else:
        stream = engine.create_stream(config)
    return {**stream_info(stream, engine.clock.now_ns()), "did_create": True}


@api_handler("STREAM.UPDATE.*", "stream_update")
def stream_update(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    config = _config_from_request(req)
    stream = engine.lookup_stream(config.name)
    engine.update_stream(stream, config)
    return stream_info(stream, engine.clock.now_ns())


@api_handler("STREAM.INFO.*", "stream_info")
def stream_info_handler(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    body = request_body(req)
    stream = engine.lookup_stream(req.params[0])
    subjects_filter = str_field(body, "subjects_filter")
    deleted_details = bool(body.get("deleted_details"))
    info = stream_info(stream, engine.clock.now_ns(), subjects_filter, deleted_details)
    paged: dict[str, Any] = {"total": 0, "offset": 0, "limit": 0}
    if subjects_filter:
        subjects = info["state"].get("subjects", {})
        offset = offset_of(body)
        names = sorted(subjects)
        page = names[offset: offset + SUBJECTS_INFO_LIMIT]
        if subjects:
            info["state"]["subjects"] = {name: subjects[name] for name in page}
        paged = {"total": len(names), "offset": offset, "limit": SUBJECTS_INFO_LIMIT}
    return {**paged, **info}


def _filtered_streams(engine: JetStream, body: dict[str, Any]) -> list[Any]:
    subject = str_field(body, "subject")
    streams = sorted(engine.streams.values(), key=lambda s: s.name)
    if subject:
        streams = [s for s in streams if stream_matches_subject(s, subject)]
    return streams


@api_handler("STREAM.NAMES", "stream_names")
def stream_names(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    body = request_body(req)
    streams = _filtered_streams(engine, body)
    offset = offset_of(body)
    page = streams[offset: offset + STREAM_NAMES_LIMIT]
    return {
        "total": len(streams),
        "offset": offset,
        "limit": STREAM_NAMES_LIMIT,
        "streams": [s.name for s in page] if page else None,
    }


@api_handler("STREAM.LIST", "stream_list")
def stream_list(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    body = request_body(req)
    streams = _filtered_streams(engine, body)
    offset = offset_of(body)
    page = streams[offset: offset + STREAM_LIST_LIMIT]
    now = engine.clock.now_ns()
    return {
        "total": len(streams),
        "offset": offset,
        "limit": STREAM_LIST_LIMIT,
        "streams": [stream_info(s, now) for s in page],
    }


@api_handler("STREAM.DELETE.*", "stream_delete")
def stream_delete(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    stream = engine.lookup_stream(req.params[0])
    engine.delete_stream(stream)
    return {"success": True}


@api_handler("STREAM.PURGE.*", "stream_purge")
def stream_purge(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    body = request_body(req)
    stream = engine.lookup_stream(req.params[0])
    subject = str_field(body, "filter")
    seq = uint_field(body, "seq") or None
    keep = uint_field(body, "keep") or None
    purged = stream.purge(subject or None, seq, keep)
    return {"success": True, "purged": purged}


@api_handler("STREAM.MSG.GET.*", "stream_msg_get")
def stream_msg_get(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    body = request_body(req)
    stream = engine.lookup_stream(req.params[0])
    seq = uint_field(body, "seq")
    last_by = str_field(body, "last_by_subj")
    next_by = str_field(body, "next_by_subj")
    if (seq and last_by) or (last_by and next_by) or not (seq or last_by or next_by):
        raise ApiError(Err.BAD_REQUEST)
    store = stream.store
    if last_by:
        msg = store.load_last(last_by)
    elif next_by:
        msg = store.load_next(max(seq, 1), [next_by])
    else:
        msg = store.load(seq)
    if msg is None:
        raise ApiError(Err.NO_MESSAGE_FOUND)
    return {"message": stored_message_json(msg)}


@api_handler("STREAM.MSG.DELETE.*", "stream_msg_delete")
def stream_msg_delete(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    body = request_body(req)
    stream = engine.lookup_stream(req.params[0])
    seq = uint_field(body, "seq")
    if seq == 0:
        raise ApiError(Err.BAD_REQUEST)
    stream.delete_message(seq, erase=not bool(body.get("no_erase")))
    return {"success": True}
