"""Stream API handlers: CREATE, UPDATE, INFO, LIST, NAMES, DELETE, PURGE, MSG.GET, MSG.DELETE.

Each handler decodes its body with `request_body`, acts on the host and
returns the response body without `type` (the dispatcher adds it). Errors are
raised as `ApiError` with nats-server's codes; shapes follow the real server
(recorded in tests/server/integration/test_streams_api.py).
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Final

from jetstream_server.core.steps import Steps
from jetstream_server.jetstream.api import views
from jetstream_server.jetstream.api.host import ApiHost, lookup_stream
from jetstream_server.jetstream.api.replies import audit, respond
from jetstream_server.jetstream.api.request import (
    MSG_DELETE_FIELDS,
    MSG_GET_FIELDS,
    STREAM_INFO_FIELDS,
    STREAM_NAMES_FIELDS,
    STREAM_PURGE_FIELDS,
    ApiRequest,
    is_empty_request,
    offset_of,
    optional_body,
    request_body,
    require_empty_request,
    str_field,
    uint_field,
)
from jetstream_server.jetstream.api.spliced import ENTRIES_PER_TURN, SplicedAnswer
from jetstream_server.jetstream.api.views import (
    STREAM_LIST_LIMIT,
    STREAM_NAMES_LIMIT,
    SUBJECTS_INFO_LIMIT,
    stored_message_json,
    stream_matches_subject,
)
from jetstream_server.jetstream.errors import ApiError, Err, client_reason
from jetstream_server.jetstream.ranges import check_count, check_seq
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import StreamConfig, validate_stream_name
from jetstream_server.jetstream.versioning import with_dynamic

logger = logging.getLogger(__name__)

CREATE_RESPONSE = "io.nats.jetstream.api.v1.stream_create_response"
SUBJECTS_PER_TURN: Final = 2048  # a create's subjects checked and subscribed per loop turn
STREAM_NAME_REQUIRED = "stream name is required and can not contain '.', '*', '>', '\\', '/'"


def _config_steps(host: ApiHost, req: ApiRequest) -> Steps[StreamConfig]:
    """The request's config, checked (its subjects `SUBJECTS_PER_TURN` a step)."""
    body = request_body(req)
    name = req.params[0]
    if body.get("name", "") != name:
        if not body.get("name"):
            validate_stream_name(name)
        raise ApiError(Err.STREAM_MISMATCH)
    config = StreamConfig.from_json(body, validate=False)
    config = yield from config.validation(SUBJECTS_PER_TURN)
    config = config.within(host.settings.limits, window_given=bool(body.get("duplicate_window")))
    return host.prepare_config(config)


def stream_create(host: ApiHost, req: ApiRequest) -> Steps[dict[str, Any] | None]:
    """Create a stream (or answer as if for an identical one), in steps of
    `SUBJECTS_PER_TURN` subjects (the dispatcher runs one per loop turn). With
    `sync_always` the answer waits for its files' fsyncs on the disk thread; a
    failed fsync takes the stream away again and answers 10049."""
    config = yield from _config_steps(host, req)
    if config.sealed:
        raise ApiError(Err.STREAM_INVALID_CONFIG, err="stream configuration for create can not be sealed")
    if config.mirror_direct and config.mirror is None:
        raise ApiError(Err.STREAM_INVALID_CONFIG, err="stream has no mirror but does have mirror direct")
    existing = host.streams.get(config.name)
    if existing is not None:
        if not existing.config.same_as(config):
            raise ApiError(Err.STREAM_NAME_EXIST)
        waiting = host.api_queue.creating.get(existing)
        if waiting is not None:  # the same create again while the first one's files are synced
            waiting.append(req)
            return None
        return _created(host, existing)
    stream, job = yield from host.create_stream_steps(config, SUBJECTS_PER_TURN)
    if job is None:
        return _created(host, stream)
    host.api_queue.creating[stream] = []
    host.clock.run_off_loop(job, functools.partial(_after_fsyncs, host, req, stream))
    return None


def _created(host: ApiHost, stream: Stream) -> dict[str, Any]:
    info = views.stream_info(stream, host.clock.now_ns())
    return {**info, "config": with_dynamic(info["config"]), "did_create": True}


def _after_fsyncs(host: ApiHost, req: ApiRequest, stream: Stream, result: object) -> None:
    """Answer a create (and the identical ones that came meanwhile) once its files
    are durable; if they could not be made so, the stream goes again."""
    requests = [req, *host.api_queue.creating.pop(stream, [])]
    if host.streams.get(stream.name) is not stream:  # deleted meanwhile, or the server stops
        result = result if isinstance(result, BaseException) else LookupError("deleted meanwhile")
    if isinstance(result, BaseException):
        why = client_reason(result) if isinstance(result, (OSError, LookupError)) else type(result).__name__
        logger.error("stream %s: fsync of its new files failed: %s", stream.name, result)
        if host.streams.get(stream.name) is stream:
            host.delete_stream(stream)
        error = ApiError(Err.STREAM_CREATE, err=f"stream {stream.name} not created: {why}")
        response: dict[str, Any] = {"type": CREATE_RESPONSE, "error": error.to_json()}
        host.api_stats.errors += len(requests)
    else:
        response = {"type": CREATE_RESPONSE, **_created(host, stream)}
    for each in requests:
        respond(host, each.reply, response)
        audit(host, each.subject, each.payload, response, each.origin)


def stream_update(host: ApiHost, req: ApiRequest) -> Steps[dict[str, Any]]:
    """Update a stream's config, in steps of `SUBJECTS_PER_TURN` subjects (as a create)."""
    if not request_body(req).get("name"):
        # nats-server checks the config before it compares the names
        raise ApiError(Err.STREAM_INVALID_CONFIG, err=STREAM_NAME_REQUIRED)
    config = yield from _config_steps(host, req)
    stream = lookup_stream(host, config.name)
    yield from host.update_stream_steps(stream, config, SUBJECTS_PER_TURN)
    info = views.stream_info(stream, host.clock.now_ns())
    return {**info, "config": with_dynamic(info["config"])}


def stream_info(host: ApiHost, req: ApiRequest) -> dict[str, Any] | SplicedAnswer:
    """A stream's info; with `subjects_filter`, the matching subjects and their
    counts, paged as nats-server pages them: `SUBJECTS_INFO_LIMIT` subjects from
    `offset` in subject order, `total`/`offset`/`limit` set only when some subject
    matches, no `subjects` when the page is empty. A page of over
    `ENTRIES_PER_TURN` subjects is encoded over turns (api/spliced.py)."""
    body = optional_body(req, STREAM_INFO_FIELDS)
    stream = lookup_stream(host, req.params[0])
    subjects_filter = str_field(body, "subjects_filter")
    paged: dict[str, Any] = {"total": 0, "offset": 0, "limit": 0}
    counts: dict[str, int] = {}
    page: list[str] = []
    if subjects_filter:
        counts = stream.store.subject_counts(None if subjects_filter == ">" else subjects_filter)
        if counts:
            offset = offset_of(body)
            paged = {"total": len(counts), "offset": offset, "limit": SUBJECTS_INFO_LIMIT}
            # in subject order, as nats-server's JSON writes a map (and pages it)
            page = sorted(counts)[offset: offset + SUBJECTS_INFO_LIMIT]
    spliced = SplicedAnswer(page, counts.__getitem__) if len(page) > ENTRIES_PER_TURN else None
    subjects: object = (
        spliced.placeholder if spliced is not None else {name: counts[name] for name in page}
    )
    info = views.stream_info(stream, host.clock.now_ns(), subjects, bool(body.get("deleted_details")))
    info["config"] = with_dynamic(info["config"])
    # a single nats-server names itself the stream's leader (only in this answer)
    ts = info.pop("ts")
    answer = {**paged, **info, "cluster": {"leader": host.settings.server_name}, "ts": ts}
    if spliced is None:
        return answer
    spliced.body = answer
    return spliced


def _filtered_streams(host: ApiHost, body: dict[str, Any]) -> list[Stream]:
    subject = str_field(body, "subject")
    streams = sorted(host.streams.values(), key=lambda s: s.name)
    if subject:
        streams = [s for s in streams if stream_matches_subject(s, subject)]
    return streams


def stream_names(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    body = optional_body(req, STREAM_NAMES_FIELDS)
    streams = _filtered_streams(host, body)
    offset = offset_of(body)
    page = streams[offset: offset + STREAM_NAMES_LIMIT]
    return {
        "total": len(streams),
        "offset": offset,
        "limit": STREAM_NAMES_LIMIT,
        "streams": [s.name for s in page] if page else None,
    }


def stream_list(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    body = optional_body(req, STREAM_NAMES_FIELDS)
    streams = _filtered_streams(host, body)
    offset = offset_of(body)
    page = streams[offset: offset + STREAM_LIST_LIMIT]
    now = host.clock.now_ns()
    return {
        "total": len(streams),
        "offset": offset,
        "limit": STREAM_LIST_LIMIT,
        "streams": [views.stream_info(s, now) for s in page],
    }


def stream_delete(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    require_empty_request(req)
    stream = lookup_stream(host, req.params[0])
    host.delete_stream(stream)
    return {"success": True}


def stream_purge(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    body = optional_body(req, STREAM_PURGE_FIELDS)
    stream = lookup_stream(host, req.params[0])
    subject = str_field(body, "filter")
    seq = check_seq(uint_field(body, "seq"), "purge seq", Err.STREAM_PURGE_FAILED) or None
    keep = check_count(uint_field(body, "keep"), "purge keep", Err.STREAM_PURGE_FAILED) or None
    purged = stream.purge(subject or None, seq, keep)
    return {"success": True, "purged": purged}


def stream_msg_get(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    if is_empty_request(req.payload):
        raise ApiError(Err.BAD_REQUEST)
    body = request_body(req, MSG_GET_FIELDS)
    stream = lookup_stream(host, req.params[0])
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


def stream_msg_delete(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    if is_empty_request(req.payload):
        raise ApiError(Err.BAD_REQUEST)
    body = request_body(req, MSG_DELETE_FIELDS)
    stream = lookup_stream(host, req.params[0])
    seq = uint_field(body, "seq")
    if seq == 0:
        # a body with no sequence (`null`, `{"no_erase": true}`) deletes nothing
        raise ApiError(Err.STREAM_MSG_DELETE_FAILED, err="no message found")
    stream.delete_message(seq, erase=not bool(body.get("no_erase")))
    return {"success": True}
