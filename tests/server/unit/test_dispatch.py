"""The `$JS.API` dispatcher without a server: envelopes, errors, routing, robustness."""

from __future__ import annotations

import json
from typing import Any

from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.api.dispatch import api_tokens, dispatch, response_type
from jetstream_server.jetstream.api.host import ApiHost
from jetstream_server.jetstream.api.request import ApiRequest, request_body
from jetstream_server.jetstream.api.routes import ROUTES, Route, RouteTable
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.errors import ApiError
from jetstream_server.jetstream.settings import EngineSettings


def make() -> tuple[JetStream, RouterDouble]:
    router = RouterDouble()
    engine = JetStream(EngineSettings(domain="hub"), FakeClock())
    engine.start(router)
    return engine, router


def call(
    engine: JetStream, router: RouterDouble, subject: str, payload: bytes,
    table: RouteTable | None = None,
) -> list[Any]:
    box = router.inbox("reply")
    if table is None:
        dispatch(engine, subject, "reply", None, payload)
    else:
        dispatch(engine, subject, "reply", None, payload, table)
    return [m.json() for m in box.take()]


def test_api_tokens_and_response_type() -> None:
    assert api_tokens("$JS.API.STREAM.INFO.S") == ("STREAM", "INFO", "S")
    assert api_tokens("$JS.hub.API.INFO", "hub") == ("INFO",)
    assert api_tokens("$JS.other.API.INFO", "hub") is None
    assert api_tokens("foo.bar") is None
    assert response_type("stream_info") == "io.nats.jetstream.api.v1.stream_info_response"
    assert response_type("x_response") == "io.nats.jetstream.api.v1.x_response"


def test_request_body_variants() -> None:
    def req(payload: bytes) -> ApiRequest:
        return ApiRequest("s", (), (), None, None, payload)

    assert request_body(req(b"")) == {} and request_body(req(b"null")) == {}
    assert request_body(req(b" {} ")) == {} and request_body(req(b'{"a":1}')) == {"a": 1}
    for bad in (b"{", b"[1]", b"\xff"):
        try:
            request_body(req(bad))
        except ApiError as exc:
            assert exc.err_code == 10025 and exc.description.startswith("invalid JSON: ")
        else:
            raise AssertionError(bad)


def test_errors_are_enveloped_and_counted() -> None:
    engine, router = make()
    [resp] = call(engine, router, "$JS.API.STREAM.INFO.NOPE", b"")
    assert resp == {
        "type": "io.nats.jetstream.api.v1.stream_info_response",
        "error": {"code": 404, "err_code": 10059, "description": "stream not found"},
        "total": 0, "offset": 0, "limit": 0,
    }
    [resp] = call(engine, router, "$JS.hub.API.STREAM.CREATE.S", b"{oops")
    assert resp["error"]["err_code"] == 10025
    assert engine.api_stats.total == 2 and engine.api_stats.errors == 2


def test_handler_crash_becomes_500_and_server_keeps_serving() -> None:
    def boom(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
        raise RuntimeError("kaboom")

    table = RouteTable((Route("TEST.BOOM", boom, "test_boom"), *ROUTES))
    engine, router = make()
    [resp] = call(engine, router, "$JS.API.TEST.BOOM", b"", table)
    assert resp["type"] == "io.nats.jetstream.api.v1.test_boom_response"
    # the reply names the failure's kind only: its text (paths, internals) stays in the log
    assert resp["error"]["code"] == 500
    assert resp["error"]["description"] == "internal error: RuntimeError"
    [resp] = call(engine, router, "$JS.API.INFO", b"", table)
    assert resp["type"] == "io.nats.jetstream.api.v1.account_info_response"


def test_unknown_api_is_silent_and_no_reply_is_fine() -> None:
    engine, router = make()
    assert call(engine, router, "$JS.API.NOPE", b"") == []
    dispatch(engine, "$JS.API.INFO", None, None, b"")  # no reply subject: nothing to send


def test_fuzzed_requests_always_answer_json_or_status() -> None:
    """Any payload to any stream API subject gets a typed JSON answer (or a
    direct-get status), never an exception into the broker."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    engine, router = make()
    call(engine, router, "$JS.API.STREAM.CREATE.S",
         json.dumps({"name": "S", "subjects": ["s.>"], "allow_direct": True}).encode())
    router.publish("s.a", None, None, b"x")
    suffixes = [
        "INFO", "STREAM.CREATE.S", "STREAM.UPDATE.S", "STREAM.INFO.S", "STREAM.LIST",
        "STREAM.NAMES", "STREAM.PURGE.S", "STREAM.MSG.GET.S", "STREAM.MSG.DELETE.S",
        "DIRECT.GET.S", "DIRECT.GET.S.s.a", "STREAM.DELETE.NOPE",
    ]
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers(-2, 2**63) | st.text(max_size=8),
        lambda children: st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["seq", "name", "subjects", "filter", "keep", "batch", "offset",
                             "last_by_subj", "multi_last", "subjects_filter", "max_msgs"]),
            children, max_size=4,
        ),
        max_leaves=8,
    )
    payloads = st.binary(max_size=40) | json_values.map(lambda v: json.dumps(v).encode())

    @settings(max_examples=150, deadline=None)
    @given(st.sampled_from(suffixes), payloads)
    def check(suffix: str, payload: bytes) -> None:
        box = router.inbox("fuzz")
        router.publish("$JS.API." + suffix, "fuzz", None, payload)
        for msg in box.take():
            if msg.headers:  # direct get: a message or a status
                continue
            body = msg.json()
            assert body["type"].startswith("io.nats.jetstream.api.v1.")
            if "error" in body:
                assert set(body["error"]) == {"code", "err_code", "description"}
                assert "internal error" not in body["error"]["description"], (suffix, payload)
        router.unsubscribe(max(router._subs))  # the inbox just made

    check()


def test_a_handler_in_steps_takes_one_step_per_turn_while_the_others_wait() -> None:
    engine, router = make()
    clock = engine.clock
    assert isinstance(clock, FakeClock)
    done: list[int] = []

    def in_steps(host: ApiHost, req: ApiRequest) -> Any:
        for i in range(3):
            done.append(i)
            yield
        return {"steps": len(done)}

    table = RouteTable((Route("TEST.STEPS", in_steps, "test_steps"), *ROUTES))
    first, waiting = router.inbox("first"), router.inbox("waiting")
    dispatch(engine, "$JS.API.TEST.STEPS", "first", None, b"", table)
    assert done == [0] and not first.messages  # the first step in the request's own turn
    dispatch(engine, "$JS.API.INFO", "waiting", None, b"", table)
    dispatch(engine, "$JS.API.STREAM.NAMES", "waiting", None, b"", table)
    assert clock.turn() == 1 and done == [0, 1]
    assert clock.turn() == 1 and done == [0, 1, 2] and not first.messages
    clock.turn()  # the last step: answered
    assert first.json()["steps"] == 3 and not waiting.messages
    clock.turn()  # then the waiting requests, one per turn, in order
    assert [m.json()["type"] for m in waiting.take()] == [response_type("account_info")]
    clock.turn()
    assert [m.json()["type"] for m in waiting.take()] == [response_type("stream_names")]
    assert not engine.api_queue.busy and not engine.api_queue.waiting
    dispatch(engine, "$JS.API.INFO", "waiting", None, b"", table)  # nothing waits: at once
    assert len(waiting.take()) == 1


def test_requests_waiting_past_the_queue_limit_are_dropped(monkeypatch: Any) -> None:
    from jetstream_server.jetstream.api import dispatch as dispatch_module

    monkeypatch.setattr(dispatch_module, "API_QUEUE_LIMIT", 3)
    engine, router = make()

    def forever(host: ApiHost, req: ApiRequest) -> Any:
        while True:
            yield

    table = RouteTable((Route("TEST.FOREVER", forever, "test_forever"), *ROUTES))
    dispatch(engine, "$JS.API.TEST.FOREVER", None, None, b"", table)
    for _ in range(5):
        dispatch(engine, "$JS.API.INFO", "r", None, b"", table)
    assert len(engine.api_queue.waiting) == 2  # three queued, dropped at the fourth, then two more
