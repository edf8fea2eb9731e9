"""Pull delivery: messages go to waiting pull requests (`CONSUMER.MSG.NEXT`).

A pull request body is empty (batch 1), a bare integer (the batch) or JSON
`{"batch", "expires" (ns), "max_bytes", "no_wait", "idle_heartbeat" (ns)}`.
`parse_pull_request` returns a `PullRequest` or raises `PullRequestError`
carrying the status line nats-server sends back (the request is then not
queued). `WaitingQueue` keeps the requests in arrival order (FIFO, as
nats-server serves them), bounded by `max_waiting`.

Status frames are header-only messages to the request's reply subject:
`404 No Messages`, `408 Request Timeout` (with `Nats-Pending-Messages` and
`Nats-Pending-Bytes`), `409 Message Size Exceeds MaxBytes`,
`409 Exceeded MaxWaiting`, `409 Consumer Deleted`, `409 Server Shutdown`
(with the pending counts), `100 Idle Heartbeat`.

`PullDelivery` is the consumer's delivery (delivery.py) for a pull consumer:
it checks a request against the consumer's limits (`max_batch`,
`max_expires`, `max_bytes`: 409 each), queues it with its expiry and
heartbeat timers, and `run` hands messages to the oldest request first (on a
`prioritized` consumer to the lowest priority number, from the next loop turn, so
requests read together are served by priority as on nats-server). A
request whose client went away (no interest in its reply subject) is
dropped: when its turn to receive comes, at its next heartbeat, or when the
queue is full (scanned at most once a second); a `no_wait` request ends with
404 once the consumer has nothing more for it (held back by
`max_ack_pending` it waits, as on nats-server, until its next heartbeat time,
when nats-server's timer pass ends it with 404 too). An `idle_heartbeat` needs an
`expires` at least twice as long, so every heartbeat timer ends; a negative
`expires` times out at once (408). A message is not given to a request within
`EXPIRY_MARGIN_NS` of its expiry (it is expired then): the client (nats-py
times out 0.1 ms after `expires`) would be gone before the message arrived,
and the message would wait for `ack_wait`.

Invariants: a request in the queue has `remaining > 0`; its timers are
cancelled when it leaves the queue (`WaitingRequest.close`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from jetstream_server.core.clock import TimerHandle
from jetstream_server.core.headers import status_headers
from jetstream_server.jetstream.consumer.config import ConsumerConfig, unmarshal_error
from jetstream_server.jetstream.consumer.delivery import (
    NS,
    ConsumerHost,
    Source,
    headers_only_block,
)
from jetstream_server.jetstream.consumer.pin_advisories import PinAdvisories
from jetstream_server.jetstream.consumer.priority import (
    PinState,
    PriorityError,
    PriorityRequest,
    add_pin_header,
    check_request,
    choose,
    sort_key,
)
from jetstream_server.store.base import StoredMessage
from jetstream_server.store.runs import MessageRun

NO_MESSAGES: Final = status_headers(404, "No Messages")
EXPIRY_MARGIN_NS: Final = 5_000_000
CONSUMER_DELETED: Final = status_headers(409, "Consumer Deleted")
EXCEEDED_MAX_WAITING: Final = status_headers(409, "Exceeded MaxWaiting")
REQUESTS_PENDING: Final = status_headers(408, "Requests Pending")
# How much longer an ack reply can get within one run than the first one built:
# its five numbers grow by at most 19 digits each (int64).
_REPLY_GROWTH: Final = 5 * 19


def request_timeout(pending_msgs: int, pending_bytes: int) -> bytes:
    return status_headers(
        408,
        "Request Timeout",
        Nats_Pending_Messages=str(pending_msgs),
        Nats_Pending_Bytes=str(pending_bytes),
    )


def server_shutdown(waiting: WaitingRequest) -> bytes:
    return status_headers(
        409,
        "Server Shutdown",
        Nats_Pending_Messages=str(waiting.remaining),
        Nats_Pending_Bytes=str(waiting.pending_bytes()),
    )


class PullRequestError(ValueError):
    """A pull request refused before queueing; `status` is the frame to send back
    (`400 Bad Request - <reason>` unless given)."""

    def __init__(self, status: bytes | None, message: str) -> None:
        super().__init__(message)
        self.status = status if status is not None else status_headers(400, f"Bad Request - {message}")


@dataclass(frozen=True, slots=True)
class PullRequest:
    batch: int = 1
    expires_ns: int = 0
    max_bytes: int = 0
    no_wait: bool = False
    idle_heartbeat_ns: int = 0
    prio: PriorityRequest | None = None  # a JSON request's priority-group fields


def _prio_str(body: dict[str, object], key: str) -> str:
    """A string field of the priority group; a wrong type gets Go's message."""
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PullRequestError(None, unmarshal_error(value, f".{key}", "string"))
    return value


def _prio_int(body: dict[str, object], key: str, go_type: str) -> int:
    value = body.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise PullRequestError(None, unmarshal_error(value, f".{key}", go_type))
    return value


class _JsonNumber(str):
    """A JSON number literal that is not an integer, kept as the client wrote it
    (Go's decoder quotes the literal when it refuses it)."""


# Go types of the request fields (`JSApiConsumerGetNextRequest`), with their ranges
_INT64: Final = (-(1 << 63), (1 << 63) - 1)
_FIELD_TYPES: Final = {
    "batch": "int",
    "max_bytes": "int",
    "expires": "time.Duration",
    "idle_heartbeat": "time.Duration",
}


def _go_field_error(key: str, value: object, go_type: str) -> PullRequestError:
    number = isinstance(value, (int, _JsonNumber)) and not isinstance(value, bool)
    if number:
        # Go names the literal only when it fails to fit a numeric field
        what = f"number {value}" if go_type != "bool" else "number"
    else:
        what = {str: "string", bool: "bool", list: "array", dict: "object"}.get(type(value), "value")
    return PullRequestError(
        None, f"json: cannot unmarshal {what} into Go struct field .{key} of type {go_type}"
    )


def _int_field(body: dict[str, object], key: str) -> int:
    """An integer field as nats-server's Go decoder reads it: int64 range, no fractions."""
    value = body.get(key, 0)
    if value is None:
        return 0
    go_type = _FIELD_TYPES[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise _go_field_error(key, value, go_type)
    if not _INT64[0] <= value <= _INT64[1]:
        raise _go_field_error(key, value, go_type)
    return value


def _decode(text: bytes) -> object:
    try:
        return json.loads(text, parse_float=_JsonNumber, parse_constant=_JsonNumber)
    except RecursionError:
        raise PullRequestError(None, "exceeded max depth") from None
    except ValueError as exc:
        raise PullRequestError(None, f"pull request is not JSON: {exc}") from None


def parse_pull_request(payload: bytes) -> PullRequest:
    """Parse a `CONSUMER.MSG.NEXT` body (also the text after `+NXT `).

    Refused as nats-server refuses them (`400 Bad Request - <reason>`): fields
    of the wrong type or out of int64 range, and an `idle_heartbeat` without an
    `expires` at least twice as long (a heartbeat timer must end with its
    request)."""
    text = payload.strip()
    if not text:
        return PullRequest()
    if text[:1] != b"{":
        try:
            batch = int(text)
        except ValueError:
            return PullRequest()  # nats-server: anything else is a batch of 1
        return PullRequest(batch=max(batch, 1)) if _INT64[0] <= batch <= _INT64[1] else PullRequest()
    body = _decode(text)
    if not isinstance(body, dict):
        raise PullRequestError(None, "pull request must be a JSON object")
    no_wait = body.get("no_wait", False)
    if no_wait is None:
        no_wait = False
    if not isinstance(no_wait, bool):
        raise _go_field_error("no_wait", no_wait, "bool")
    batch, expires, max_bytes, heartbeat = (
        _int_field(body, key) for key in ("batch", "expires", "max_bytes", "idle_heartbeat")
    )
    if heartbeat > 0 and heartbeat * 2 > expires:
        raise PullRequestError(
            status_headers(400, "Bad Request - heartbeat value too large"),
            "idle_heartbeat * 2 must not exceed expires",
        )
    return PullRequest(
        batch=max(batch, 1),
        expires_ns=expires,  # negative: expired on arrival (408), as nats-server
        max_bytes=max(max_bytes, 0),
        no_wait=no_wait,
        idle_heartbeat_ns=max(heartbeat, 0),
        prio=PriorityRequest(
            group=_prio_str(body, "group"),
            min_pending=_prio_int(body, "min_pending", "int64"),
            min_ack_pending=_prio_int(body, "min_ack_pending", "int64"),
            id=_prio_str(body, "id"),
            priority=_prio_int(body, "priority", "int"),
        ),
    )


@dataclass(slots=True, eq=False)
class WaitingRequest:
    """One queued pull request and what it has received so far."""

    reply: str
    request: PullRequest
    received_ns: int
    remaining: int = 0
    bytes_left: int = 0
    delivered: int = 0
    expire_timer: TimerHandle | None = None
    heartbeat_timer: TimerHandle | None = None
    last_sent_ns: int = 0
    key: int = 0  # its place in the WaitingQueue
    pin_id: str = ""  # pinned_client: the pin id it carries or was given

    def __post_init__(self) -> None:
        self.remaining = self.request.batch
        self.bytes_left = self.request.max_bytes
        self.last_sent_ns = self.received_ns
        if self.request.prio is not None:
            self.pin_id = self.request.prio.id

    @property
    def prio(self) -> PriorityRequest | None:
        return self.request.prio

    def pending_bytes(self) -> int:
        return self.bytes_left if self.request.max_bytes else 0

    @property
    def deadline_ns(self) -> int:
        """When the request stops taking messages: its expiry less a margin (a tenth
        of `expires`, at most `EXPIRY_MARGIN_NS`) for the message to reach a client
        whose own timeout (nats-py: expires + 0.1 ms) runs out with it."""
        expires = self.request.expires_ns
        return self.received_ns + expires - min(EXPIRY_MARGIN_NS, expires // 10)

    def close(self) -> None:
        for timer in (self.expire_timer, self.heartbeat_timer):
            if timer is not None:
                timer.cancel()
        self.expire_timer = None
        self.heartbeat_timer = None


class WaitingQueue:
    """Pull requests waiting for messages, oldest first."""

    def __init__(self, max_waiting: int) -> None:
        self.max_waiting = max_waiting
        # by key, in arrival order; read it, change it only through the methods
        self.requests: dict[int, WaitingRequest] = {}
        self._next_id = 0

    def __len__(self) -> int:
        return len(self.requests)

    def __iter__(self) -> Iterator[WaitingRequest]:
        return iter(list(self.requests.values()))

    @property
    def full(self) -> bool:
        return len(self.requests) >= self.max_waiting > 0

    def add(self, waiting: WaitingRequest) -> None:
        self._next_id += 1
        waiting.key = self._next_id
        self.requests[self._next_id] = waiting

    def add_by_priority(self, waiting: WaitingRequest) -> None:
        """`prioritized` consumers: after every request of the same or a lower
        priority number, before the higher ones (nats-server's insertSorted)."""
        self.add(waiting)
        mine = sort_key(waiting.prio)
        if all(sort_key(w.prio) <= mine for w in self.requests.values()):
            return
        ordered = sorted(self.requests.values(), key=lambda w: sort_key(w.prio))  # stable
        self.requests = {w.key: w for w in ordered}

    def peek(self) -> WaitingRequest | None:
        for waiting in self.requests.values():
            return waiting
        return None

    def remove(self, waiting: WaitingRequest) -> None:
        if self.requests.pop(waiting.key, None) is not None:
            waiting.close()

    def clear(self) -> list[WaitingRequest]:
        requests = list(self.requests.values())
        for waiting in requests:
            waiting.close()
        self.requests.clear()
        return requests


class PullDelivery:
    """The delivery of a pull consumer (see module docstring)."""

    def __init__(self, source: Source, host: ConsumerHost, config: ConsumerConfig) -> None:
        self.source = source
        self.host = host
        self.clock = host.clock
        self.waiting = WaitingQueue(config.max_waiting)
        self.pin: PinState | None = None
        self._advisories = PinAdvisories(host, source.stream_name, source.name)
        self._last_interest_scan_ns = 0
        self.reconfigure(config)

    def reconfigure(self, config: ConsumerConfig) -> None:
        self.config = config
        self.headers_only = config.headers_only
        self.waiting.max_waiting = config.max_waiting
        self.policy = config.priority_policy
        if self.policy == "pinned_client":
            if self.pin is None:
                self.pin = PinState(self.clock, config.pinned_ttl_ns, self.source.kick)
                self.pin.on_pinned = self._advisories.pinned
                self.pin.on_unpinned = self._advisories.unpinned
            self.pin.ttl_ns = config.pinned_ttl_ns
        elif self.pin is not None:
            self.pin.unpin()
            self.pin = None

    def unpin(self, group: str = "") -> None:
        """`$JS.API.CONSUMER.UNPIN`: the next request without a pin id gets a new one."""
        if self.pin is not None:
            self.pin.unpin()
            self._advisories.unpinned(group, "admin")
            self.source.kick()

    def close(self, *, notify: bool) -> None:
        if self.pin is not None:
            self.pin.unpin()
        for waiting in self.waiting.clear():
            if notify:
                self.host.publish(waiting.reply, None, CONSUMER_DELETED, b"")

    def shutting_down(self) -> None:
        """nats-server's signalPullConsumers: each waiting request gets `409
        Server Shutdown` with what it still expected, so its client re-issues
        it elsewhere or after the restart."""
        for waiting in self.waiting.clear():
            self.host.publish(waiting.reply, None, server_shutdown(waiting), b"")

    def ready(self) -> bool:
        return bool(self.waiting.requests)  # (on every ack: no __len__ call)

    def active(self) -> bool:
        return bool(self.waiting.requests)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    def bound(self) -> bool | None:
        return None

    # -- requests ------------------------------------------------------------------
    def request(self, reply: str, payload: bytes) -> None:
        publish = self.host.publish
        try:
            request = parse_pull_request(payload)
        except PullRequestError as exc:
            publish(reply, None, exc.status, b"")
            return
        cfg = self.config
        if cfg.max_batch and request.batch > cfg.max_batch:
            publish(reply, None, status_headers(409, f"Exceeded MaxRequestBatch of {cfg.max_batch}"), b"")
            return
        if cfg.max_expires_ns and request.expires_ns > cfg.max_expires_ns:
            publish(
                reply,
                None,
                status_headers(409, f"Exceeded MaxRequestExpires of {cfg.max_expires_ns / NS:g}s"),
                b"",
            )
            return
        if cfg.max_bytes and request.max_bytes > cfg.max_bytes:
            publish(reply, None, status_headers(409, f"Exceeded MaxRequestMaxBytes of {cfg.max_bytes}"), b"")
            return
        try:
            check_request(cfg, request.prio, self.pin)
        except PriorityError as exc:
            publish(reply, None, exc.status, b"")
            return
        source = self.source
        source.touch()
        source.recount()
        if self.waiting.full:
            self._drop_uninterested()
        if request.no_wait and self._too_early(source.num_to_deliver):
            publish(reply, None, REQUESTS_PENDING, b"")
            return
        if self.waiting.full:
            publish(reply, None, EXCEEDED_MAX_WAITING, b"")
            return
        if request.expires_ns < 0:
            # nats-server: an expiry in the past times out at once, never waits
            publish(reply, None, request_timeout(request.batch, request.max_bytes), b"")
            return
        if (
            self.policy in ("overflow", "pinned_client") and request.no_wait
            and not request.expires_ns and not source.has_more()
        ):
            # before any pin or threshold is looked at, as nats-server
            publish(reply, None, NO_MESSAGES, b"")
            return
        waiting = WaitingRequest(reply=reply, request=request, received_ns=self.clock.now_ns())
        if self.policy == "prioritized":
            self.waiting.add_by_priority(waiting)
        else:
            self.waiting.add(waiting)
        if request.expires_ns:
            waiting.expire_timer = self.clock.call_later(
                request.expires_ns / NS, lambda: self._expire(waiting)
            )
        if request.idle_heartbeat_ns:
            waiting.heartbeat_timer = self.clock.call_later(
                request.idle_heartbeat_ns / NS, lambda: self._heartbeat(waiting)
            )
        if self.policy == "prioritized":
            # nats-server queues pull requests for the consumer's own goroutine, which
            # serves the waiting ones by priority: requests that arrive together (one
            # read) are all queued before the next turn delivers to the lowest number
            source.continue_later()
        else:
            source.kick()

    def _choose(self) -> WaitingRequest | None:
        """overflow / pinned_client: the request the next message may go to."""

        def drop(waiting: object, status: bytes) -> None:
            assert isinstance(waiting, WaitingRequest)
            self.waiting.remove(waiting)
            self.host.publish(waiting.reply, None, status, b"")

        found = choose(
            self.policy,
            self.waiting,
            self.pin,
            self.source.cursor.npc,
            self.source.num_ack_pending,
            drop,
        )
        assert found is None or isinstance(found, WaitingRequest)
        return found

    def _too_early(self, to_deliver: int) -> bool:
        """Whether a no_wait request comes too early: fewer messages are left to deliver
        than the waiting requests (those whose clients are still there) still ask for.
        nats-server then refuses it with "408 Requests Pending"."""
        if to_deliver <= 0 or not self.waiting:
            return False
        has_interest = self.host.has_interest
        asked = sum(w.remaining for w in self.waiting if has_interest(w.reply))
        return to_deliver < asked

    def _drop_uninterested(self) -> None:
        """A full queue first loses the requests whose client left (nats-server: at
        most once a second, so a flood of requests does not rescan the queue)."""
        now = self.clock.now_ns()
        if now - self._last_interest_scan_ns < NS:
            return
        self._last_interest_scan_ns = now
        has_interest = self.host.has_interest
        for waiting in self.waiting:
            if not has_interest(waiting.reply):
                self.waiting.remove(waiting)

    def _expire_now(self, waiting: WaitingRequest) -> None:
        self.waiting.remove(waiting)  # (cancels its timers)
        self.host.publish(
            waiting.reply, None, request_timeout(waiting.remaining, waiting.pending_bytes()), b""
        )

    def _expire(self, waiting: WaitingRequest) -> None:
        waiting.expire_timer = None
        self.waiting.remove(waiting)
        if not self.source.closed:
            self.host.publish(
                waiting.reply, None, request_timeout(waiting.remaining, waiting.pending_bytes()), b""
            )

    def _heartbeat(self, waiting: WaitingRequest) -> None:
        waiting.heartbeat_timer = None
        if self.source.closed or waiting.remaining <= 0:
            return
        if not self.host.has_interest(waiting.reply):
            # the client left: drop the request (and its timers), as nats-server does
            self.waiting.remove(waiting)
            return
        request = waiting.request
        if request.no_wait and (not request.expires_ns or waiting.delivered > 0):
            # nats-server's timer pass ends a one-shot request that got messages
            # (or has no expiry) even while max_ack_pending holds it back
            self.waiting.remove(waiting)
            self.host.publish(waiting.reply, None, NO_MESSAGES, b"")
            return
        interval = waiting.request.idle_heartbeat_ns
        now = self.clock.now_ns()
        if now - waiting.last_sent_ns >= interval:
            cursor = self.source.cursor
            headers = status_headers(
                100,
                "Idle Heartbeat",
                Nats_Last_Consumer=str(cursor.dseq),
                Nats_Last_Stream=str(cursor.last_sseq),
            )
            self.host.publish(waiting.reply, None, headers, b"")
            waiting.last_sent_ns = now
            delay = interval
        else:
            delay = interval - (now - waiting.last_sent_ns)
        waiting.heartbeat_timer = self.clock.call_later(delay / NS, lambda: self._heartbeat(waiting))

    # -- delivery (hot path) -----------------------------------------------------------
    def _exceeds_max_bytes(self, waiting: WaitingRequest) -> None:
        """The next message does not fit what `waiting` has left of its max_bytes:
        the request ends with 409 (nats-server: the message stays for the next)."""
        self.waiting.remove(waiting)
        self.host.publish(
            waiting.reply,
            None,
            status_headers(
                409,
                "Message Size Exceeds MaxBytes",
                Nats_Pending_Messages=str(waiting.remaining),
                Nats_Pending_Bytes=str(waiting.bytes_left),
            ),
            b"",
        )

    def _send_run(self, waiting: WaitingRequest, run: MessageRun) -> int:
        """Send the messages of `run` that fit `waiting`'s max_bytes as one run;
        how many went (0: not even the first fits, the request ended with 409)."""
        source = self.source
        frames = source.run_frames(run)
        if waiting.request.max_bytes:
            fit, used = frames.fitting(waiting.bytes_left)
            if fit < len(frames):
                if not fit:
                    self._exceeds_max_bytes(waiting)
                    return 0
                frames = frames.head(fit)
            waiting.bytes_left -= used
        source.commit_run(frames)
        self.host.deliver_run(waiting.reply, frames)
        count = len(frames)
        waiting.remaining -= count
        waiting.delivered += count
        waiting.last_sent_ns = source.delivered_last_ns
        if waiting.remaining <= 0:
            self.waiting.remove(waiting)
        return count

    def run(self, hint: StoredMessage | None, budget: int) -> int:
        source = self.source
        if source.paused:
            return budget
        queue = self.waiting
        publish = self.host.publish
        deliver = self.host.deliver
        has_interest = self.host.has_interest
        next_message = source.next_message
        next_run = source.next_run
        commit = source.commit
        headers_only = self.headers_only
        chosen = self.policy in ("overflow", "pinned_client")
        pin = self.pin
        # runs of new messages, unless each message needs a look of its own
        runs = not chosen and not headers_only and pin is None
        cursor = source.cursor
        checked: str | None = None
        reply_bound = -1  # the longest ack reply this run can build (max_bytes requests)
        now = self.clock.now_ns()
        while True:
            waiting = self._choose() if chosen else queue.peek()
            if waiting is None:
                break
            if waiting.request.expires_ns and now >= waiting.deadline_ns:
                # its client is giving up (or its timer is late): 408, no message
                self._expire_now(waiting)
                continue
            if checked != waiting.reply:
                if not has_interest(waiting.reply):
                    queue.remove(waiting)
                    continue
                checked = waiting.reply
            if budget <= 0:
                source.continue_later()
                return 0  # continued next turn; no_wait requests are not over yet
            if runs and (hint is None or hint.seq != cursor.sseq):
                hint = None
                run = next_run(
                    min(waiting.remaining, budget),
                    waiting.bytes_left if waiting.request.max_bytes else 0,
                )
                if run is not None:
                    if run:
                        budget -= self._send_run(waiting, run)
                    elif run.blocked_size:
                        self._exceeds_max_bytes(waiting)  # not even the first message fits
                    else:
                        break
                    continue
            budget -= 1
            nxt = next_message(hint)
            hint = None
            if nxt is None:
                break
            msg, dc = nxt
            if headers_only:
                headers: bytes | None = headers_only_block(msg.headers, len(msg.data))
                payload = b""
            else:
                headers, payload = msg.headers, msg.data
            size = 0
            exact = False
            if waiting.request.max_bytes:
                # nats-server counts subject, ack reply, headers and payload; the
                # reply is built (by commit) only once, unless the message may not fit
                size = len(msg.subject) + len(headers or b"") + len(payload)
                if reply_bound < 0:
                    reply_bound = len(source.ack_reply(msg, dc)) + _REPLY_GROWTH
                if size + reply_bound > waiting.bytes_left:
                    size += len(source.ack_reply(msg, dc))
                    exact = True
                if exact and size > waiting.bytes_left:
                    source.unget(msg, dc)
                    self._exceeds_max_bytes(waiting)
                    continue
            if pin is not None and pin.pin_id:
                headers = add_pin_header(headers, pin.pin_id)
            reply = commit(msg, dc)
            if waiting.request.max_bytes:
                waiting.bytes_left -= size if exact else size + len(reply)
            deliver(waiting.reply, msg.subject, reply, headers, payload)
            waiting.remaining -= 1
            waiting.delivered += 1
            waiting.last_sent_ns = source.delivered_last_ns
            if waiting.remaining <= 0:
                queue.remove(waiting)
        # no_wait requests end when the consumer has nothing more for them; held
        # back by max_ack_pending (messages remain) they wait, as on nats-server.
        if source.has_more():
            return budget
        for waiting in queue:
            req = waiting.request
            if req.no_wait and (not req.expires_ns or waiting.delivered > 0):
                queue.remove(waiting)
                publish(waiting.reply, None, NO_MESSAGES, b"")
        return budget
