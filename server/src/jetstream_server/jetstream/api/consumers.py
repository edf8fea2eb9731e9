"""Consumer API handlers: CREATE (every form), INFO, LIST, NAMES, DELETE, PAUSE, RESET, MSG.NEXT.

Create forms, as nats-server reads them:
- `CONSUMER.CREATE.<s>`: legacy ephemeral (a durable name is 10020);
- `CONSUMER.CREATE.<s>.<name>` and `.<name>.<filter>`: the name comes from the
  subject (a different `durable_name` is 10017; a filter in the subject must
  equal the config's `filter_subject`, else 10131; several filters are 10137);
- `CONSUMER.DURABLE.CREATE.<s>.<durable>`: the config must carry that durable
  name (10018 when missing, 10017 when different).
`action` "create" on an existing consumer with another config is 10148,
"update" of a missing one 10149; "" creates or updates. An identical config
answers the existing consumer. Updates are refused (10012, nats-server's
wording) for what cannot change.

`CONSUMER.RESET` (ADR-60, nats-server 2.14+): empty body resets delivery
state keeping the ack floor; `{"seq": N}` moves the ack floor to N-1 (allowed
for deliver policies all / by_start_sequence / by_start_time); the answer is
the consumer info with `reset_seq`. Unlike nats-server 2.15.1, which leaves a
RESET of a missing consumer unanswered, we answer it with 10014.

`restore_consumers(host, stream)` reopens the durable consumers persisted
under a stream's directory; the engine calls it for every stream it opens
from disk.
"""

from __future__ import annotations

import functools
import logging
import secrets
import string
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from jetstream_server.core.filter_set import BudgetExceeded, FilterSet
from jetstream_server.core.gotime import ZERO_TIME, format_duration, rfc3339_ns
from jetstream_server.core.headers import status_headers
from jetstream_server.jetstream import advisories
from jetstream_server.jetstream.api.host import ApiHost, lookup_stream
from jetstream_server.jetstream.api.replies import audit, respond
from jetstream_server.jetstream.api.request import (
    CONSUMER_CREATE_FIELDS,
    CONSUMER_PAUSE_FIELDS,
    PAGED_FIELDS,
    ApiRequest,
    offset_of,
    optional_body,
    request_body,
    require_empty_request,
)
from jetstream_server.jetstream.consumer.config import (
    ConsumerConfig,
    parse_time,
    unmarshal_error,
    valid_group_name,
)
from jetstream_server.jetstream.consumer.consumer import Consumer
from jetstream_server.jetstream.consumer.store import ConsumerStore, list_consumer_stores
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import (
    MAX_DESCRIPTION_LEN,
    MAX_METADATA_LEN,
    metadata_size,
    stream_consumer_limits,
)
from jetstream_server.jetstream.versioning import with_dynamic

logger = logging.getLogger(__name__)

CREATE_RESPONSE = "io.nats.jetstream.api.v1.consumer_create_response"
CONSUMER_NAMES_LIMIT = 1024
# consumers whose create or update is being fsynced: the replies of identical
# requests that came meanwhile (answered with it, never before it is durable)
_SAVING: weakref.WeakKeyDictionary[Consumer, list[str | None]] = weakref.WeakKeyDictionary()
CONSUMER_LIST_LIMIT = 256
_NAME_ALPHABET = string.ascii_letters + string.digits
NO_RESPONDERS = status_headers(503)


def ephemeral_name() -> str:
    return "".join(secrets.choice(_NAME_ALPHABET) for _ in range(8))


def _consumers(stream: Stream) -> dict[str, Consumer]:
    return {n: c for n, c in stream.consumers.items() if isinstance(c, Consumer)}


def lookup_consumer(host: ApiHost, stream_name: str, name: str) -> Consumer:
    stream = lookup_stream(host, stream_name)
    consumer = stream.consumers.get(name)
    if not isinstance(consumer, Consumer):
        raise ApiError(Err.CONSUMER_NOT_FOUND)
    return consumer


def _check_workqueue(stream: Stream, name: str, config: ConsumerConfig) -> None:
    mine = config.filters
    theirs_all = FilterSet()  # every other consumer's filters: one trie, not pairs
    for other in _consumers(stream).values():
        if other.name == name:
            continue
        theirs = other.config.filters
        if not mine and not theirs:
            raise ApiError(Err.CONSUMER_WQ_MULTIPLE_UNFILTERED)
        if not mine or not theirs:
            raise ApiError(Err.CONSUMER_WQ_CONSUMER_NOT_UNIQUE)
        for subject in theirs:
            theirs_all.add(subject)
    try:
        if any(theirs_all.collides(subject) for subject in mine):
            raise ApiError(Err.CONSUMER_WQ_CONSUMER_NOT_UNIQUE)
    except BudgetExceeded:
        raise ApiError(Err.STREAM_INVALID_CONFIG, err="too many filter subjects to check") from None


def _persistent(stream: Stream, config: ConsumerConfig) -> bool:
    return stream.directory is not None and config.is_durable and not config.mem_storage


def create_consumer(
    host: ApiHost, stream: Stream, name: str, config: ConsumerConfig, action: str = ""
) -> tuple[Consumer, Callable[[], None] | None]:
    """Create, update or return the consumer `name` (see module docstring), and
    the fsyncs of what a durable create or update wrote, as a job for the disk
    thread (None: nothing waits; then a new consumer's first delivery is
    scheduled here, else after the job, see `_create`)."""
    config = _within_limits(config.with_limit_defaults(stream.config, host.settings.limits), stream, host)
    config.validate(stream.config.retention)
    existing = stream.consumers.get(name)
    if isinstance(existing, Consumer) and not existing.closed:
        if existing.config.same_as(config):
            return existing, None
        if action == "create":
            raise ApiError(Err.CONSUMER_ALREADY_EXISTS)
        reason = existing.config.update_error(config)
        if reason is not None:
            raise ApiError(Err.CONSUMER_CREATE, err=reason)
        if stream.config.retention == "workqueue":
            _check_workqueue(stream, name, config)
        if existing.store is not None:
            existing.store.defer_fsyncs()
        try:
            existing.update_config(config)
        finally:
            job = existing.store.take_fsyncs() if existing.store is not None else None
        return existing, job
    if action == "update":
        raise ApiError(Err.CONSUMER_DOES_NOT_EXIST)
    if "\x00" in name and stream.directory is not None:
        # no directory can carry the name: nats-server's answer, without its path
        logger.warning("consumer %r on stream %s: name holds a NUL byte", name, stream.name)
        raise ApiError(Err.CONSUMER_CREATE, err="error creating store for consumer")
    cap = host.store_limits.account.consumer_cap(stream.config.max_consumers)
    if cap > 0 and name not in stream.consumers and len(stream.consumers) >= cap:
        raise ApiError(Err.MAXIMUM_CONSUMERS_LIMIT)
    if stream.config.retention == "workqueue":
        _check_workqueue(stream, name, config)
    store = (
        ConsumerStore.for_stream(stream.directory, name, sync=host.settings.sync_always)
        if stream.directory is not None and _persistent(stream, config)
        else None
    )
    consumer = Consumer(host.consumer_host, stream, config, name=name, store=store)
    try:
        stream.add_consumer(name, consumer)
    except ApiError:
        consumer.stop()
        raise
    job = None
    if store is not None:
        store.defer_fsyncs()
        try:
            store.write_meta(config.to_json(), consumer.created_ns)
            consumer.write_state()
            job = store.take_fsyncs()
        except OSError as exc:
            store.take_fsyncs()
            # nothing half-made stays: not listed, no files, so no restart resurrects it
            logger.error("stream %s: creating consumer %s failed: %s", stream.name, name, exc)
            consumer.stop()
            stream.consumers.pop(name, None)
            store.destroy()
            raise ApiError(
                Err.CONSUMER_CREATE, err=f"consumer {name} not created: {_why(exc)}"
            ) from exc
    if job is None:
        # First deliveries go out after the create response (as with nats-server, whose
        # answer shows the consumer before it delivered anything).
        host.clock.call_later(0, consumer.kick)
        _created_advisory(host, stream, name)
    return consumer, job


def _created_advisory(host: ApiHost, stream: Stream, name: str) -> None:
    advisories.consumer_action(host.consumer_host, host.clock.now_ns(), stream.name, name,
                               "create", host.settings.domain or None)


def _abandon(host: ApiHost, stream: Stream, consumer: Consumer, exc: BaseException) -> None:
    """A durable create whose fsyncs failed: nothing half-made stays."""
    logger.error("stream %s: creating consumer %s failed: %s", stream.name, consumer.name, exc)
    consumer.stop()
    if stream.consumers.get(consumer.name) is consumer:
        stream.consumers.pop(consumer.name, None)
    if consumer.store is not None:
        consumer.store.destroy()


def _after_fsyncs(
    host: ApiHost, req: ApiRequest, stream: Stream, consumer: Consumer, created: bool,
    info: dict[str, Any], result: object,
) -> None:
    """The answer to a create or update whose files are now durable (or not),
    and to the identical requests that came meanwhile."""
    replies = [req.reply, *_SAVING.pop(consumer, [])]
    if isinstance(result, BaseException):
        why = _why(result) if isinstance(result, OSError) else type(result).__name__
        if created:
            _abandon(host, stream, consumer, result)
            error = ApiError(
                Err.CONSUMER_CREATE, err=f"consumer {consumer.name} not created: {why}"
            )
        else:
            logger.error(
                "stream %s: saving consumer %s failed: %s", stream.name, consumer.name, result
            )
            error = ApiError(Err.CONSUMER_CREATE, err=why)
        response = {"type": CREATE_RESPONSE, "error": error.to_json()}
        for reply in replies:
            host.api_stats.errors += 1
            respond(host, reply, response)
        audit(host, req.subject, req.payload, response, req.origin)
        return
    response = {"type": CREATE_RESPONSE, **info}
    for reply in replies:
        respond(host, reply, response)
    audit(host, req.subject, req.payload, response, req.origin)
    if created:
        consumer.kick()
        _created_advisory(host, stream, consumer.name)


def _within_limits(config: ConsumerConfig, stream: Stream, host: ApiHost) -> ConsumerConfig:
    """nats-server's checks of a (defaulted) consumer config against the caps on
    descriptions and metadata, the server's `jetstream.limits` and the stream's
    `consumer_limits`, in nats-server's order."""
    config = config.with_defaults()
    if len(config.description.encode()) > MAX_DESCRIPTION_LEN:
        raise ApiError(Err.CONSUMER_DESCRIPTION_TOO_LONG, max=MAX_DESCRIPTION_LEN)
    if metadata_size(config.metadata) > MAX_METADATA_LEN:
        raise ApiError(Err.CONSUMER_METADATA_LENGTH, limit=f"{MAX_METADATA_LEN // 1024}KB")
    limits = host.settings.limits
    if config.is_pull and 0 < limits.max_request_batch < config.max_batch:
        raise ApiError(Err.CONSUMER_MAX_REQUEST_BATCH_EXCEEDED, limit=limits.max_request_batch)
    if 0 < limits.max_ack_pending < config.max_ack_pending:
        raise ApiError(Err.CONSUMER_MAX_PENDING_ACK_EXCESS, limit=limits.max_ack_pending)
    stream_max_ack, stream_inactive = stream_consumer_limits(stream.config)
    if 0 < stream_max_ack < config.max_ack_pending:
        raise ApiError(Err.CONSUMER_MAX_PENDING_ACK_EXCESS, limit=stream_max_ack)
    if 0 < stream_inactive < config.inactive_threshold_ns:
        raise ApiError(Err.CONSUMER_INACTIVE_THRESHOLD_EXCESS, limit=format_duration(stream_inactive))
    return config


def restore_consumers(host: ApiHost, stream: Stream) -> None:
    """Reopen the durable consumers saved under `stream.directory`."""
    for store in list_consumer_stores(stream.directory, sync=host.settings.sync_always):
        name = store.directory.name
        try:
            raw, created_ns = store.read_meta()
            config = ConsumerConfig.from_json(raw).with_defaults()
        except (OSError, ValueError, KeyError, ApiError) as exc:
            logger.error("stream %s: consumer %s not restored: %s", stream.name, name, exc)
            continue
        state = store.read_state()
        consumer = Consumer(
            host.consumer_host, stream, config, name=name, created_ns=created_ns, state=state,
            store=store,
        )
        stream.consumers[name] = consumer
        host.clock.call_later(0, consumer.kick)
        logger.info(
            "stream %s: restored consumer %s (ack floor %d, %d pending)",
            stream.name, name, consumer.acks.asflr, len(consumer.acks.pending),
        )


# -- create ------------------------------------------------------------------------
def _create(host: ApiHost, req: ApiRequest, *, form: str) -> dict[str, Any] | None:
    body = request_body(req, CONSUMER_CREATE_FIELDS)
    stream_name = req.params[0]
    if body.get("stream_name") != stream_name:
        raise ApiError(Err.STREAM_MISMATCH)
    raw = body.get("config")
    if raw is None:
        raw = {}
    config = ConsumerConfig.from_json(raw)
    action = body.get("action", "") or ""
    if action not in ("", "create", "update"):
        raise ApiError(Err.INVALID_JSON, err=f"unknown consumer action {action!r}")
    stream = lookup_stream(host, stream_name)
    if form == "legacy":
        if config.durable_name:
            raise ApiError(Err.CONSUMER_EPHEMERAL_WITH_DURABLE_NAME)
        name = config.name or ephemeral_name()
    elif form == "durable":
        name = req.params[1]
        if not config.durable_name:
            raise ApiError(Err.CONSUMER_DURABLE_NAME_NOT_SET)
        if config.durable_name != name:
            raise ApiError(Err.CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT)
    else:
        name = req.params[1]
        if any(c in name for c in "*>\\/"):
            raise ApiError(
                Err.STREAM_INVALID_CONFIG, err="consumer name can not contain '.', '*', '>', '\\', '/'"
            )
        if config.durable_name and config.durable_name != name:
            raise ApiError(Err.CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT)
        if form == "filtered":
            if config.filter_subjects:
                raise ApiError(Err.CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED)
            wanted = config.filter_subject or (
                config.filter_subjects[0] if config.filter_subjects else ""
            )
            if wanted != req.params[2]:
                raise ApiError(Err.CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH)
    config = replace(config, name=name)
    before = stream.consumers.get(name)
    created = not (isinstance(before, Consumer) and not before.closed)
    consumer, job = create_consumer(host, stream, name, config, action)
    info = consumer.info()
    info.pop("push_bound", None)  # not known yet at create time (nats-server omits it)
    info["config"] = with_dynamic(info["config"])
    if job is None:
        waiting = _SAVING.get(consumer)
        if waiting is not None:  # the same create again while the first one's files are synced
            waiting.append(req.reply)
            return None
        return info
    # answered once what it wrote is durable; the fsyncs run on the disk thread
    _SAVING.setdefault(consumer, [])
    done = functools.partial(_after_fsyncs, host, req, stream, consumer, created, info)
    host.clock.run_off_loop(job, done)
    return None


def consumer_create_legacy(host: ApiHost, req: ApiRequest) -> dict[str, Any] | None:
    return _create(host, req, form="legacy")


def consumer_create_named(host: ApiHost, req: ApiRequest) -> dict[str, Any] | None:
    return _create(host, req, form="named")


def consumer_create_filtered(host: ApiHost, req: ApiRequest) -> dict[str, Any] | None:
    return _create(host, req, form="filtered")


def consumer_create_durable(host: ApiHost, req: ApiRequest) -> dict[str, Any] | None:
    return _create(host, req, form="durable")


# -- info, list, names, delete -------------------------------------------------------
def consumer_info(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    require_empty_request(req)
    info = lookup_consumer(host, req.params[0], req.params[1]).info()
    info["config"] = with_dynamic(info["config"])
    return info


def consumer_names(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    body = optional_body(req, PAGED_FIELDS)
    stream = lookup_stream(host, req.params[0])
    names = sorted(_consumers(stream))
    offset = offset_of(body)
    return {
        "total": len(names),
        "offset": offset,
        "limit": CONSUMER_NAMES_LIMIT,
        "consumers": names[offset : offset + CONSUMER_NAMES_LIMIT],
    }


def consumer_list(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    body = optional_body(req, PAGED_FIELDS)
    stream = lookup_stream(host, req.params[0])
    consumers = _consumers(stream)
    names = sorted(consumers)
    offset = offset_of(body)
    return {
        "total": len(names),
        "offset": offset,
        "limit": CONSUMER_LIST_LIMIT,
        "consumers": [consumers[n].info() for n in names[offset : offset + CONSUMER_LIST_LIMIT]],
    }


def consumer_delete(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    require_empty_request(req)
    lookup_consumer(host, req.params[0], req.params[1]).delete()
    return {"success": True}


# -- pause, reset --------------------------------------------------------------------
def consumer_pause(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    body = optional_body(req, CONSUMER_PAUSE_FIELDS)
    consumer = lookup_consumer(host, req.params[0], req.params[1])
    text = body.get("pause_until") or ""
    if not isinstance(text, str):
        raise ApiError(Err.INVALID_JSON, err="pause_until must be an RFC 3339 time")
    try:
        until_ns = parse_time(text) if text else 0
    except ValueError as exc:
        raise ApiError(Err.INVALID_JSON, err=str(exc)) from None
    consumer.pause(until_ns)
    now = host.clock.now_ns()
    if until_ns > now:
        return {
            "paused": True,
            "pause_until": rfc3339_ns(until_ns),
            "pause_remaining": until_ns - now,
        }
    return {"paused": False, "pause_until": ZERO_TIME}


def consumer_reset(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    if req.payload and not req.payload.strip():
        # nats-server decodes any body it got (not strictly): blanks are no JSON
        raise ApiError(Err.INVALID_JSON, err="unexpected end of JSON input")
    body = request_body(req)
    seq = body.get("seq", 0)
    if seq is None:
        seq = 0
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise ApiError(
            Err.INVALID_JSON,
            err=f"json: cannot unmarshal {seq!r} into Go struct field "
            "JSApiConsumerResetRequest.seq of type uint64",
        )
    consumer = lookup_consumer(host, req.params[0], req.params[1])
    reset_seq = consumer.reset(seq)
    return {**consumer.info(), "reset_seq": reset_seq}


def consumer_unpin(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    """`$JS.API.CONSUMER.UNPIN.<stream>.<consumer>` {"group"}: the pinned client of a
    `pinned_client` consumer loses its pin (nats-server's checks, in its order)."""
    if not req.payload.strip():
        raise ApiError(Err.INVALID_JSON, err="unexpected end of JSON input")
    body = request_body(req)  # (decoded leniently by nats-server too)
    group = body.get("group") or ""
    if not isinstance(group, str):
        raise ApiError(
            Err.INVALID_JSON,
            err=unmarshal_error(group, "JSApiConsumerUnpinRequest.group", "string"),
        )
    if not group:
        raise ApiError(Err.INVALID_JSON, err="consumer group not specified")
    if not valid_group_name(group):
        raise ApiError(Err.CONSUMER_INVALID_GROUP_NAME)
    consumer = lookup_consumer(host, req.params[0], req.params[1])
    if group not in consumer.config.priority_groups:
        raise ApiError(Err.CONSUMER_INVALID_PRIORITY_GROUP)
    consumer.unpin(group)
    return {}


# -- pull requests -------------------------------------------------------------------
def consumer_msg_next(host: ApiHost, req: ApiRequest) -> None:
    stream = host.streams.get(req.params[0])
    consumer = stream.consumers.get(req.params[1]) if stream is not None else None
    if not isinstance(consumer, Consumer) or consumer.closed:
        # Nobody serves this subject on nats-server: the client sees no responders.
        if req.reply:
            host.router.publish(req.reply, None, NO_RESPONDERS, b"")
        return None
    consumer.process_pull(req.reply, req.payload)
    return None


def _why(exc: OSError) -> str:
    """The OS's words for a client, without absolute paths."""
    return (exc.strerror or type(exc).__name__).lower()
