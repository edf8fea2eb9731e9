"""Advisories (jetstream/advisories.py): built and sent only when someone listens."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from jetstream_server.jetstream import advisories

NS = 1_000_000_000


@dataclass
class Out:
    listening: bool
    sent: list[tuple[str, bytes]] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    def publish(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        self.sent.append((subject, payload))

    def has_interest(self, subject: str) -> bool:
        self.asked.append(subject)
        return self.listening


def test_nothing_is_built_without_interest() -> None:
    out = Out(listening=False)
    assert not advisories.stream_action(out, NS, "S", "create")
    assert not advisories.api_audit(out, NS, "srv", None, "$JS.API.INFO", b"", {"type": "x"})
    assert out.sent == []
    assert out.asked == ["$JS.EVENT.ADVISORY.STREAM.CREATED.S", "$JS.EVENT.ADVISORY.API"]


def test_shapes() -> None:
    out = Out(listening=True)
    advisories.terminated(out, 1_800_000_000 * NS + 5, "S", "C", 3, 7, 2)
    advisories.api_audit(out, NS, "srv", None, "$JS.API.INFO", b"", {"type": "t"}, "hub")
    (term_subject, term), (audit_subject, audit) = out.sent
    assert term_subject == "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.S.C"
    body = json.loads(term)
    assert body.pop("id") != json.loads(audit)["id"]
    assert body == {"type": "io.nats.jetstream.advisory.v1.terminated",
                    "timestamp": "2027-01-15T08:00:00.000000005Z", "stream": "S",
                    "consumer": "C", "consumer_seq": 3, "stream_seq": 7, "deliveries": 2}
    body = json.loads(audit)
    assert audit_subject == "$JS.EVENT.ADVISORY.API"
    assert body["client"] is None and "request" not in body and body["domain"] == "hub"
    assert body["response"] == '{"type":"t"}'
    assert len({advisories.event_id() for _ in range(1000)}) == 1000


def test_a_lapsed_pin_is_announced_as_a_timeout() -> None:
    from jetstream_server.core.clock import FakeClock
    from jetstream_server.jetstream.consumer.priority import PinState

    clock = FakeClock(start_ns=NS)
    calls: list[tuple[str, str]] = []
    pin = PinState(clock, 2 * NS, lambda: calls.append(("kick", "")))
    pin.on_pinned = lambda group, pin_id: calls.append((group, pin_id))
    pin.on_unpinned = lambda group, reason: calls.append((group, reason))
    pin_id = pin.assign("G")
    clock.advance(1)
    assert calls == [("G", pin_id)]
    clock.advance(1)
    assert calls == [("G", pin_id), ("G", "timeout"), ("kick", "")]
    assert pin.pin_id == ""
