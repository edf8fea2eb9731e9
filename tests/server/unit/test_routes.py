"""The JetStream API route table (api/routes.py) against nats-server's list of subjects.

`NATS_SERVER_API` is nats-server's (v2.15) `$JS.API` subject list from
`server/jetstream_api.go`, each with the response type it answers with (None
where the answer is not a JSON API response). Every subject this server
implements must resolve to the route serving it, with nats-server's response
type; every route must serve a nats-server subject; the subjects it does not
implement stay unrouted (and so unanswered).
"""

from __future__ import annotations

from typing import Any

import pytest
from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.api import account, clustered, consumers, direct, snapshots, streams
from jetstream_server.jetstream.api.dispatch import dispatch
from jetstream_server.jetstream.api.routes import ROUTE_TABLE, ROUTES, Route
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings

# nats-server subject (after "$JS.API.") -> its response type name
NATS_SERVER_API: dict[str, str | None] = {
    "INFO": "account_info",
    "STREAM.CREATE.*": "stream_create",
    "STREAM.UPDATE.*": "stream_update",
    "STREAM.NAMES": "stream_names",
    "STREAM.LIST": "stream_list",
    "STREAM.INFO.*": "stream_info",
    "STREAM.DELETE.*": "stream_delete",
    "STREAM.PURGE.*": "stream_purge",
    "STREAM.SNAPSHOT.*": "stream_snapshot",
    "STREAM.RESTORE.*": "stream_restore",
    "STREAM.MSG.DELETE.*": "stream_msg_delete",
    "STREAM.MSG.GET.*": "stream_msg_get",
    "DIRECT.GET.*": None,  # answered with messages and statuses
    "DIRECT.GET.*.>": None,
    "CONSUMER.CREATE.*": "consumer_create",
    "CONSUMER.CREATE.*.>": "consumer_create",
    "CONSUMER.DURABLE.CREATE.*.*": "consumer_create",
    "CONSUMER.NAMES.*": "consumer_names",
    "CONSUMER.LIST.*": "consumer_list",
    "CONSUMER.INFO.*.*": "consumer_info",
    "CONSUMER.DELETE.*.*": "consumer_delete",
    "CONSUMER.PAUSE.*.*": "consumer_pause",
    "CONSUMER.MSG.NEXT.*.*": None,  # answered with messages and statuses
    "CONSUMER.RESET.*.*": "consumer_reset",
    "CONSUMER.UNPIN.*.*": "consumer_unpin",
    "STREAM.PEER.REMOVE.*": "stream_remove_peer",
    "STREAM.PEER.EVACUATE.*": "stream_evacuate_peer",
    "STREAM.CANCEL_MOVE.*": "stream_cancel_move",
    "STREAM.LEADER.STEPDOWN.*": "stream_leader_stepdown",
    "CONSUMER.LEADER.STEPDOWN.*.*": "consumer_leader_stepdown",
    "META.LEADER.STEPDOWN": "meta_leader_stepdown",
    "SERVER.REMOVE": "meta_server_remove",
    "SERVER.EVACUATE": None,
    "META.RESCUE": "meta_rescue",
    "ACCOUNT.PURGE.*": "account_purge",
    "ACCOUNT.STREAM.MOVE.*.*": None,
    "ACCOUNT.STREAM.CANCEL_MOVE.*.*": None,
}

# What this server implements: nats-server subject -> the handler(s) serving it.
IMPLEMENTED: dict[str, tuple[Any, ...]] = {
    "INFO": (account.account_info,),
    "STREAM.CREATE.*": (streams.stream_create,),
    "STREAM.UPDATE.*": (streams.stream_update,),
    "STREAM.NAMES": (streams.stream_names,),
    "STREAM.LIST": (streams.stream_list,),
    "STREAM.INFO.*": (streams.stream_info,),
    "STREAM.DELETE.*": (streams.stream_delete,),
    "STREAM.PURGE.*": (streams.stream_purge,),
    "STREAM.MSG.DELETE.*": (streams.stream_msg_delete,),
    "STREAM.MSG.GET.*": (streams.stream_msg_get,),
    "STREAM.SNAPSHOT.*": (snapshots.stream_snapshot,),
    "STREAM.RESTORE.*": (snapshots.stream_restore,),
    "DIRECT.GET.*": (direct.direct_get,),
    "DIRECT.GET.*.>": (direct.direct_get_last,),
    "CONSUMER.CREATE.*": (consumers.consumer_create_legacy,),
    # one nats-server pattern, two routes here: named, and named with a filter
    "CONSUMER.CREATE.*.>": (consumers.consumer_create_named, consumers.consumer_create_filtered),
    "CONSUMER.DURABLE.CREATE.*.*": (consumers.consumer_create_durable,),
    "CONSUMER.NAMES.*": (consumers.consumer_names,),
    "CONSUMER.LIST.*": (consumers.consumer_list,),
    "CONSUMER.INFO.*.*": (consumers.consumer_info,),
    "CONSUMER.DELETE.*.*": (consumers.consumer_delete,),
    "CONSUMER.PAUSE.*.*": (consumers.consumer_pause,),
    "CONSUMER.MSG.NEXT.*.*": (consumers.consumer_msg_next,),
    "CONSUMER.RESET.*.*": (consumers.consumer_reset,),
    "CONSUMER.UNPIN.*.*": (consumers.consumer_unpin,),
    # clustering: refused as a single nats-server refuses them (503 10010)
    "STREAM.PEER.REMOVE.*": (clustered.cluster_required,),
    "STREAM.PEER.EVACUATE.*": (clustered.cluster_required,),
    "STREAM.CANCEL_MOVE.*": (clustered.cluster_required,),
    "STREAM.LEADER.STEPDOWN.*": (clustered.cluster_required,),
    "CONSUMER.LEADER.STEPDOWN.*.*": (clustered.cluster_required,),
}


def example(pattern: str, wildcard_tokens: int = 1) -> tuple[str, ...]:
    """Concrete tokens for a pattern: `*` -> a name, `>` -> `wildcard_tokens` tokens."""
    out: list[str] = []
    for token in pattern.split("."):
        if token == "*":
            out.append("NOPE")
        elif token == ">":
            out.extend(f"t{i}" for i in range(wildcard_tokens))
        else:
            out.append(token)
    return tuple(out)


def handler_for(tokens: tuple[str, ...]) -> Any:
    found = ROUTE_TABLE.resolve(tokens)
    return None if found is None else found[0].handler


@pytest.mark.parametrize("subject", sorted(IMPLEMENTED))
def test_every_implemented_nats_server_subject_is_routed(subject: str) -> None:
    expected = IMPLEMENTED[subject]
    # `>` covers one token or more: each length may go to its own route
    served = {handler_for(example(subject, n)) for n in (1, 2, 3)}
    assert served == set(expected), subject
    wanted = NATS_SERVER_API[subject]
    for n in (1, 2, 3):
        found = ROUTE_TABLE.resolve(example(subject, n))
        assert found is not None, subject
        if wanted is not None:
            assert found[0].response == wanted, subject


def test_every_route_serves_a_nats_server_subject() -> None:
    routed = {r.handler for r in ROUTES}
    implemented = {h for handlers in IMPLEMENTED.values() for h in handlers}
    assert routed == implemented
    assert set(IMPLEMENTED) <= set(NATS_SERVER_API)
    assert len({r.pattern for r in ROUTES}) == len(ROUTES)  # no pattern twice


@pytest.mark.parametrize("subject", sorted(set(NATS_SERVER_API) - set(IMPLEMENTED)))
def test_unimplemented_nats_server_subjects_stay_unrouted(subject: str) -> None:
    assert ROUTE_TABLE.resolve(example(subject)) is None


def test_most_specific_pattern_wins_and_captures() -> None:
    found = ROUTE_TABLE.resolve(("CONSUMER", "DURABLE", "CREATE", "S", "D"))
    assert found is not None
    assert found[0].handler is consumers.consumer_create_durable and found[1] == ("S", "D")
    found = ROUTE_TABLE.resolve(("CONSUMER", "CREATE", "S", "C", "orders", "*"))
    assert found is not None
    assert found[0].handler is consumers.consumer_create_filtered
    assert found[1] == ("S", "C", "orders.*")
    found = ROUTE_TABLE.resolve(("DIRECT", "GET", "S", "a", "b"))
    assert found is not None and found[1] == ("S", "a.b")
    assert ROUTE_TABLE.resolve(("STREAM", "INFO")) is None  # `*` is exactly one token
    assert ROUTE_TABLE.resolve(("STREAM", "INFO", "S", "x")) is None


def test_route_matching_rules() -> None:
    route = Route("A.*.>", account.account_info, "x")
    assert route.match(("A", "b", "c", "d")) == ("b", "c.d")
    assert route.match(("A", "b")) is None  # `>` needs one token at least
    assert route.specificity == (1, 3)


ANSWERED_WITH_JSON = [
    r for r in ROUTES if r.counted and r.response not in ("account_info", "consumer_getnext")
]


@pytest.mark.parametrize("route", ANSWERED_WITH_JSON, ids=lambda r: r.pattern)
def test_every_json_route_answers_errors_in_its_envelope(route: Route) -> None:
    """A bad request (bad JSON, or an unknown stream; a body where none is taken;
    clustering) to any route gets its response type and the zero-valued fields
    nats-server keeps in errors."""
    router = RouterDouble()
    engine = JetStream(EngineSettings(), FakeClock())
    engine.start(router)
    box = router.inbox("reply")
    dispatch(engine, "$JS.API." + ".".join(example(route.pattern)), "reply", None, b"{")
    [answer] = [m.json() for m in box.take()]
    assert answer["type"] == f"io.nats.jetstream.api.v1.{route.response}_response"
    # invalid JSON / stream not found / not an empty request / clustering required
    assert answer["error"]["err_code"] in (10025, 10059, 10038, 10010)
    for key, value in route.error_fields.items():
        assert answer[key] == value
    assert engine.api_stats.errors == 1
