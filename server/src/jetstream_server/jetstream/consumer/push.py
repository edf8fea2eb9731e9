"""Push delivery: a consumer that sends to its `deliver_subject`.

Delivers while someone is interested in the deliver subject (a queue group
`deliver_group` gets each message once, the broker picks the member). With
`flow_control`, a `100 FlowControl Request` (reply subject
`$JS.FC.<stream>.<consumer>.<n>`) follows every `FC_CHUNK_BYTES` delivered;
delivery stalls while `FC_MAX_PENDING_BYTES` are not covered by an answered
request. With `idle_heartbeat`, a `100 Idle Heartbeat` carrying
`Nats-Last-Consumer` / `Nats-Last-Stream` (and `Nats-Consumer-Stalled: <fc
reply>` while a request is unanswered) goes out when nothing was sent for that long.
`rate_limit_bps` paces delivery with a token bucket (bits per second).
With ack policy `flow_control` (nats-server 2.14) the answers to flow control
requests are the acks: an answer carrying `Nats-Last-Consumer` /
`Nats-Last-Stream` acknowledges everything up to that delivery (as ack all);
a request also goes out when `max_ack_pending` deliveries wait, and with an
idle heartbeat while any wait (none outstanding). Ordered
consumers (nats-py, ADR-17) are ordinary push consumers with ack none, flow
control and heartbeats; their gap detection relies on consumer sequences
being dense, which `Consumer.commit` guarantees.

`PushDelivery` is the consumer's delivery (delivery.py) for a push consumer,
the same shape as `PullDelivery`; a pull request to it is refused with
`409 Consumer is push based`.

Invariants: bytes outstanding = sent - covered by answered FC requests;
delivery never runs while stalled; all timers and the FC subscription are
released by `close()`.
"""

from __future__ import annotations

from typing import Final

from jetstream_server.core.clock import TimerHandle
from jetstream_server.core.headers import get_header, status_headers
from jetstream_server.jetstream.consumer.config import ConsumerConfig
from jetstream_server.jetstream.consumer.delivery import (
    NS,
    ConsumerHost,
    Source,
    headers_only_block,
)
from jetstream_server.store.base import StoredMessage
from jetstream_server.store.runs import MessageRun

FC_CHUNK_BYTES: Final = 256 * 1024
FC_MAX_PENDING_BYTES: Final = 2 * 1024 * 1024
FC_CHUNK_MSGS: Final = 2048
# no interest in the deliver subject: look again after 5 ms, doubling up to 1 s (nats.py
# creates a push consumer before it subscribes to its deliver subject; nats-server starts
# delivering the moment the subscription comes, so the first looks come soon)
INTEREST_POLL_MIN_S: Final = 0.005
INTEREST_POLL_MAX_S: Final = 1.0
FLOW_CONTROL_REQUEST: Final = status_headers(100, "FlowControl Request")
PUSH_BASED: Final = status_headers(409, "Consumer is push based")


class PushDelivery:
    """The delivery of a push consumer (see module docstring)."""

    def __init__(self, source: Source, host: ConsumerHost, config: ConsumerConfig) -> None:
        self.source = source
        self.host = host
        self.clock = host.clock
        self._fc_prefix = f"$JS.FC.{source.stream_name}.{source.name}"
        self._hb_timer: TimerHandle | None = None
        self._poll_timer: TimerHandle | None = None
        self._poll_delay = INTEREST_POLL_MIN_S
        self._fc_sid: int | None = None
        self._fc_seq = 0
        self._fc_out: dict[str, int] = {}  # fc reply subject -> sent bytes it covers
        self._sent_bytes = 0
        self._covered_bytes = 0
        self._since_fc_bytes = 0
        self._since_fc_msgs = 0
        self.last_sent_ns = self.clock.now_ns()
        self._rl_tokens = 0.0
        self._rl_last_ns = 0
        self._rl_timer: TimerHandle | None = None
        self.reconfigure(config)

    # -- configuration ---------------------------------------------------------
    def reconfigure(self, config: ConsumerConfig) -> None:
        self.config = config
        self.deliver_subject = config.deliver_subject
        if config.flow_control and self._fc_sid is None:
            self._fc_sid = self.host.subscribe(self._fc_prefix + ".*", self._on_fc_reply)
        elif not config.flow_control and self._fc_sid is not None:
            self.host.unsubscribe(self._fc_sid)
            self._fc_sid = None
            self._fc_out.clear()
            self._covered_bytes = self._sent_bytes
        if self._hb_timer is not None:
            self._hb_timer.cancel()
            self._hb_timer = None
        if config.idle_heartbeat_ns > 0:
            self._hb_timer = self.clock.call_later(config.idle_heartbeat_ns / NS, self._heartbeat)

    def close(self, *, notify: bool) -> None:
        for timer in (self._hb_timer, self._poll_timer, self._rl_timer):
            if timer is not None:
                timer.cancel()
        self._hb_timer = self._poll_timer = self._rl_timer = None
        if self._fc_sid is not None:
            self.host.unsubscribe(self._fc_sid)
            self._fc_sid = None

    def request(self, reply: str, payload: bytes) -> None:
        self.host.publish(reply, None, PUSH_BASED, b"")

    def ready(self) -> bool:
        return True  # interest is checked when it runs

    def active(self) -> bool:
        return self.has_interest()

    @property
    def num_waiting(self) -> int:
        return 0

    def bound(self) -> bool | None:
        return self.has_interest()

    def has_interest(self) -> bool:
        return bool(self.deliver_subject) and self.host.has_interest(self.deliver_subject)

    # -- flow control ----------------------------------------------------------
    @property
    def stalled(self) -> bool:
        return (
            self._fc_sid is not None
            and self._sent_bytes - self._covered_bytes >= FC_MAX_PENDING_BYTES
        )

    def _send_fc(self) -> None:
        self._fc_seq += 1
        subject = f"{self._fc_prefix}.{self._fc_seq}"
        self._fc_out[subject] = self._sent_bytes
        self._since_fc_bytes = 0
        self._since_fc_msgs = 0
        self.host.publish(self.deliver_subject, subject, FLOW_CONTROL_REQUEST, b"")

    def _on_fc_reply(
        self, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        covered = self._fc_out.pop(subject, None)
        if covered is None:
            return
        # An answer covers everything sent before that request, older requests included.
        for older in [s for s, b in self._fc_out.items() if b <= covered]:
            del self._fc_out[older]
        if covered > self._covered_bytes:
            self._covered_bytes = covered
        if self.config.ack_policy == "flow_control" and headers:
            # nats-server processFlowControl: an answer without deliveries
            # (consumer sequence 0) acknowledges nothing
            dseq = _seq(get_header(headers, "Nats-Last-Consumer"))
            sseq = _seq(get_header(headers, "Nats-Last-Stream"))
            if sseq > 0 and dseq > 0:
                self.source.ack(sseq, dseq)
        self.source.kick()

    def _latest_fc(self) -> str | None:
        if not self._fc_out:
            return None
        return max(self._fc_out.items(), key=lambda item: item[1])[0]

    # -- heartbeats ------------------------------------------------------------
    def _heartbeat(self) -> None:
        self._hb_timer = None
        source = self.source
        if source.closed:
            return
        interval = self.config.idle_heartbeat_ns
        if interval <= 0:
            return
        now = self.clock.now_ns()
        idle = now - self.last_sent_ns
        if idle >= interval:
            cursor = source.cursor
            extra = {
                "Nats_Last_Consumer": str(cursor.dseq),
                "Nats_Last_Stream": str(cursor.sseq - 1),
            }
            # nats-server names the request still unanswered (not only when stalled)
            latest = self._latest_fc()
            if latest is not None:
                extra["Nats_Consumer_Stalled"] = latest
            if self.has_interest():
                self.host.publish(
                    self.deliver_subject, None, status_headers(100, "Idle Heartbeat", **extra), b""
                )
                if self._fc_acks_waiting():
                    self._send_fc()
            self.last_sent_ns = now
            delay = interval
        else:
            delay = interval - idle
        self._hb_timer = self.clock.call_later(delay / NS, self._heartbeat)

    # -- interest --------------------------------------------------------------
    def _poll_interest(self) -> None:
        if self._poll_timer is not None:
            return
        self._poll_timer = self.clock.call_later(self._poll_delay, self._on_poll)
        self._poll_delay = min(self._poll_delay * 2, INTEREST_POLL_MAX_S)

    def _on_poll(self) -> None:
        self._poll_timer = None
        if not self.source.closed:
            self.source.kick()

    # -- rate limit ------------------------------------------------------------
    def _take_tokens(self, size: int, rate: float) -> bool:
        """Token bucket for `rate_limit_bps` (burst: one second of the rate, and
        always at least one message). False: wait; a wake-up is scheduled."""
        now = self.clock.now_ns()
        burst = max(rate, float(size))
        if self._rl_last_ns:
            self._rl_tokens = min(burst, self._rl_tokens + (now - self._rl_last_ns) / NS * rate)
        else:
            self._rl_tokens = burst
        self._rl_last_ns = now
        if self._rl_tokens >= size:
            self._rl_tokens -= size
            return True
        if self._rl_timer is None:
            delay = (size - self._rl_tokens) / rate
            self._rl_timer = self.clock.call_later(delay, self._rl_wake)
        return False

    def _rl_wake(self) -> None:
        self._rl_timer = None
        if not self.source.closed:
            self.source.kick()

    # -- delivery --------------------------------------------------------------
    def _next_run(self, budget: int) -> MessageRun | None:
        """The next run (`Source.next_run`), within what is left of the current flow
        control chunk and of the bytes that may be outstanding; a message larger
        than that goes alone, as it would one by one."""
        source = self.source
        if self._fc_sid is None:
            return source.next_run(budget)
        outstanding = self._sent_bytes - self._covered_bytes
        limit = min(budget, FC_CHUNK_MSGS - self._since_fc_msgs)
        room = min(FC_CHUNK_BYTES - self._since_fc_bytes, FC_MAX_PENDING_BYTES - outstanding)
        run = source.next_run(max(limit, 1), max(room, 1))
        if run is not None and not run and run.blocked_size:
            run = source.next_run(1)
        return run

    def _sent(self, size: int, count: int) -> None:
        """Flow control bookkeeping for `count` messages of `size` bytes just sent."""
        self._sent_bytes += size
        self._since_fc_bytes += size
        self._since_fc_msgs += count
        if self._since_fc_bytes >= FC_CHUNK_BYTES or self._since_fc_msgs >= FC_CHUNK_MSGS:
            self._send_fc()

    def run(self, hint: StoredMessage | None, budget: int) -> int:
        source = self.source
        if source.paused:
            return budget
        target = self.deliver_subject
        if not self.host.has_interest(target):
            self._poll_interest()
            return budget
        self._poll_delay = INTEREST_POLL_MIN_S
        deliver = self.host.deliver
        deliver_run = self.host.deliver_run
        next_message = source.next_message
        commit = source.commit
        flow = self._fc_sid is not None
        rate = self.config.rate_limit_bps / 8  # bytes per second
        sent_any = False
        headers_only = self.config.headers_only
        runs = not rate and not headers_only  # else each message needs a look of its own
        cursor = source.cursor
        # `not (flow and self.stalled)`, without a property call per message
        while not flow or self._sent_bytes - self._covered_bytes < FC_MAX_PENDING_BYTES:
            if budget <= 0:
                source.continue_later()
                break
            if runs and (hint is None or hint.seq != cursor.sseq):
                hint = None
                run = self._next_run(budget)
                if run is not None:
                    if not run:
                        break
                    frames = source.run_frames(run)
                    source.commit_run(frames)
                    deliver_run(target, frames)
                    sent_any = True
                    budget -= len(frames)
                    if flow:
                        self._sent(frames.wire_bytes(), len(frames))
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
            if rate and not self._take_tokens(len(headers or b"") + len(payload), rate):
                source.unget(msg, dc)
                break
            reply = commit(msg, dc)
            deliver(target, msg.subject, reply, headers, payload)
            sent_any = True
            if flow:
                self._sent(len(msg.subject) + len(reply) + len(headers or b"") + len(payload), 1)
        if sent_any:
            self.last_sent_ns = self.clock.now_ns()
            if flow and self.stalled and self._since_fc_msgs:
                self._send_fc()
            elif self._fc_acks_waiting() and (
                0 < self.config.max_ack_pending <= source.num_ack_pending
            ):
                self._send_fc()  # acks come only with flow control answers
        return budget

    def _fc_acks_waiting(self) -> bool:
        """Ack policy flow_control, deliveries unacknowledged, no request out."""
        return (
            self.config.ack_policy == "flow_control"
            and self._fc_sid is not None
            and not self._fc_out
            and self.source.num_ack_pending > 0
        )


def _seq(value: str | None) -> int:
    """A sequence header as nats-server's parseInt64 reads it (-1: not a number)."""
    text = (value or "").strip()
    return int(text) if text.isascii() and text.isdigit() else -1
