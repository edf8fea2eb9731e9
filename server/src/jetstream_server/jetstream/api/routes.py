"""The JetStream API route table: every `$JS.API.*` subject this server serves.

One explicit table, as nats-server's `jetstream_api.go` keeps its list of
subjects and handlers: a `Route` per subject pattern (the part after
`$JS.API.`), the handler function, and the response type name (the
dispatcher answers with `"type": "io.nats.jetstream.api.v1.<name>_response"`).
Nothing registers itself: a handler not listed here is not served.

Patterns match token by token: `*` is exactly one token (captured into
`ApiRequest.params`), a trailing `>` one or more tokens (captured as one
dotted string). When several patterns match, the most specific wins (more
literal tokens first, then more tokens): `CONSUMER.DURABLE.CREATE.S.D`
is a durable create, not a named create of stream `DURABLE`.

A handler returns the response body (without "type"), a `SplicedAnswer`
(a body too large to encode in one turn: api/spliced.py), or None when it
answers by itself; or it is a generator of steps returning one of those (its
work in loop turns: core/steps.py) (CONSUMER.MSG.NEXT delivers messages and statuses,
DIRECT.GET answers with messages). Raising `ApiError` produces the error
envelope; `error_fields` are the zero-valued fields nats-server keeps in an
error response of that type.

The stream and consumer subjects of clustering (leader step-down, peer
removal and evacuation, move cancelling) are answered as a single nats-server
answers them: 503 10010 (clustered.py). The other nats-server subjects not in
the table (meta leader, server removal, account purge, account stream moves)
are the system account's; like any subject without a route, they get no answer
here, as from a single nats-server to a client of another account.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from jetstream_server.core.steps import Steps
from jetstream_server.jetstream.api import account, clustered, consumers, direct, snapshots, streams
from jetstream_server.jetstream.api.host import ApiHost
from jetstream_server.jetstream.api.request import ApiRequest
from jetstream_server.jetstream.api.spliced import SplicedAnswer

ApiBody: TypeAlias = "dict[str, Any] | SplicedAnswer | None"
ApiHandler: TypeAlias = Callable[[ApiHost, ApiRequest], "ApiBody | Steps[ApiBody]"]

_PAGED_ZERO: Final[Mapping[str, object]] = {"total": 0, "offset": 0, "limit": 0}


@dataclass(frozen=True, slots=True)
class Route:
    pattern: str  # after "$JS.API.", e.g. "STREAM.INFO.*"
    handler: ApiHandler
    response: str  # response type name, e.g. "stream_info" (-> stream_info_response)
    error_fields: Mapping[str, object] = field(default_factory=dict)
    counted: bool = True  # counted in the account's API stats (direct gets are not)
    tokens: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", tuple(self.pattern.split(".")))

    @property
    def specificity(self) -> tuple[int, int]:
        literals = sum(1 for t in self.tokens if t not in ("*", ">"))
        return (literals, len(self.tokens))

    def match(self, tokens: tuple[str, ...]) -> tuple[str, ...] | None:
        """What the wildcards capture from `tokens`, or None when they do not match."""
        params: list[str] = []
        for i, want in enumerate(self.tokens):
            if want == ">":
                if i >= len(tokens):
                    return None
                params.append(".".join(tokens[i:]))
                return tuple(params)
            if i >= len(tokens):
                return None
            if want == "*":
                params.append(tokens[i])
            elif want != tokens[i]:
                return None
        return tuple(params) if len(tokens) == len(self.tokens) else None


ROUTES: Final[tuple[Route, ...]] = (
    # account
    Route("INFO", account.account_info, "account_info"),
    # streams
    Route("STREAM.CREATE.*", streams.stream_create, "stream_create"),
    Route("STREAM.UPDATE.*", streams.stream_update, "stream_update"),
    Route("STREAM.NAMES", streams.stream_names, "stream_names",
          {**_PAGED_ZERO, "streams": None}),
    Route("STREAM.LIST", streams.stream_list, "stream_list", {**_PAGED_ZERO, "streams": None}),
    Route("STREAM.INFO.*", streams.stream_info, "stream_info", _PAGED_ZERO),
    Route("STREAM.DELETE.*", streams.stream_delete, "stream_delete"),
    Route("STREAM.PURGE.*", streams.stream_purge, "stream_purge", {"purged": 0}),
    Route("STREAM.MSG.GET.*", streams.stream_msg_get, "stream_msg_get"),
    Route("STREAM.MSG.DELETE.*", streams.stream_msg_delete, "stream_msg_delete"),
    Route("STREAM.SNAPSHOT.*", snapshots.stream_snapshot, "stream_snapshot"),
    Route("STREAM.RESTORE.*", snapshots.stream_restore, "stream_restore",
          {"deliver_subject": ""}),
    # direct gets: answered with messages, not counted as API calls
    Route("DIRECT.GET.*", direct.direct_get, "direct_get", counted=False),
    Route("DIRECT.GET.*.>", direct.direct_get_last, "direct_get", counted=False),
    # consumers (nats-server serves the named and the filtered create as one
    # pattern, CONSUMER.CREATE.*.>; they are two routes here)
    Route("CONSUMER.CREATE.*", consumers.consumer_create_legacy, "consumer_create"),
    Route("CONSUMER.CREATE.*.*", consumers.consumer_create_named, "consumer_create"),
    Route("CONSUMER.CREATE.*.*.>", consumers.consumer_create_filtered, "consumer_create"),
    Route("CONSUMER.DURABLE.CREATE.*.*", consumers.consumer_create_durable, "consumer_create"),
    Route("CONSUMER.NAMES.*", consumers.consumer_names, "consumer_names",
          {**_PAGED_ZERO, "consumers": []}),
    Route("CONSUMER.LIST.*", consumers.consumer_list, "consumer_list",
          {**_PAGED_ZERO, "consumers": []}),
    Route("CONSUMER.INFO.*.*", consumers.consumer_info, "consumer_info"),
    Route("CONSUMER.DELETE.*.*", consumers.consumer_delete, "consumer_delete"),
    Route("CONSUMER.PAUSE.*.*", consumers.consumer_pause, "consumer_pause",
          {"paused": False, "pause_until": "0001-01-01T00:00:00Z"}),
    Route("CONSUMER.RESET.*.*", consumers.consumer_reset, "consumer_reset", {"reset_seq": 0}),
    Route("CONSUMER.UNPIN.*.*", consumers.consumer_unpin, "consumer_unpin"),
    Route("CONSUMER.MSG.NEXT.*.*", consumers.consumer_msg_next, "consumer_getnext"),
    # clustering (503 10010 here, as on a single nats-server)
    Route("STREAM.LEADER.STEPDOWN.*", clustered.cluster_required, "stream_leader_stepdown"),
    Route("CONSUMER.LEADER.STEPDOWN.*.*", clustered.cluster_required, "consumer_leader_stepdown"),
    Route("STREAM.PEER.REMOVE.*", clustered.cluster_required, "stream_remove_peer"),
    Route("STREAM.PEER.EVACUATE.*", clustered.cluster_required, "stream_evacuate_peer"),
    Route("STREAM.CANCEL_MOVE.*", clustered.cluster_required, "stream_cancel_move"),
)


class RouteTable:
    """Resolves API tokens to the most specific matching route."""

    def __init__(self, routes: tuple[Route, ...]) -> None:
        self.routes = routes
        self._by_specificity = sorted(routes, key=lambda r: r.specificity, reverse=True)

    def resolve(self, tokens: tuple[str, ...]) -> tuple[Route, tuple[str, ...]] | None:
        """The most specific route matching `tokens`, with its captured params."""
        for route in self._by_specificity:
            params = route.match(tokens)
            if params is not None:
                return route, params
        return None


ROUTE_TABLE: Final = RouteTable(ROUTES)
