"""A push consumer's look for interest in its deliver subject (consumer/push.py),
without a server: the engine on the router double with a fake clock."""

from __future__ import annotations

import json

from test_direct_get_caps import engine_with

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.api.dispatch import dispatch


def test_a_push_consumer_finds_its_subscriber_within_its_first_look() -> None:
    """nats.py creates a push consumer before it subscribes to the deliver subject
    (test_ephemeral_subscribe): delivery starts at the first look for interest, 5 ms
    after the create, not after a back-off that ran on meanwhile."""
    from jetstream_server.jetstream.consumer.push import INTEREST_POLL_MIN_S

    engine, router = engine_with(["d.a"] * 3, 10)
    body = {"stream_name": "D", "config": {"deliver_subject": "push.in", "ack_policy": "none"}}
    dispatch(engine, "$JS.API.CONSUMER.CREATE.D.P", None, None, json.dumps(body).encode())
    box = router.inbox("push.in")  # the client subscribes after the create
    assert isinstance(engine.clock, FakeClock)
    engine.clock.advance(INTEREST_POLL_MIN_S)
    assert len(box.take()) == 3
