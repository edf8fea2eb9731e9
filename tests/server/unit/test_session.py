"""The client session state machine (core/session.py), sans-IO: no sockets, no loop.

Sessions on a real `Broker` are fed client bytes and events; a `Wire` double
stands in for the asyncio connection and collects what would be written and
why the session closed. Every scripted exchange runs twice: the client's
bytes fed whole and one byte at a time (the output must not differ).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetstream_server.core import protocol as P
from jetstream_server.core.auth import Authenticator, Identity, StaticAuth, User, UsersAuth
from jetstream_server.core.clock import FakeClock
from jetstream_server.core.permissions import Permissions, ResponsePermission, SubjectPermission
from jetstream_server.core.routing import Broker, MessageList
from jetstream_server.core.session import (
    DROPS_OUTPUT,
    TRANSITIONS,
    Close,
    Event,
    Session,
    SessionSettings,
    State,
)


class Wire:
    """A `SessionIO` double: what the asyncio connection would write, and when."""

    def __init__(self) -> None:
        self.session: Session | None = None
        self.written = bytearray()
        self.ready_calls = 0
        self.closes: list[Close] = []

    def output_ready(self) -> None:
        self.ready_calls += 1

    def buffered_bytes(self) -> int:
        return 0

    def session_closed(self, close: Close) -> None:
        assert self.session is not None
        self.closes.append(close)
        self.written += self.session.data_to_send()

    def take(self) -> bytes:
        """Everything written so far plus what is queued; clears both."""
        assert self.session is not None
        data = bytes(self.written) + self.session.data_to_send()
        self.written.clear()
        return data


def open_session(
    broker: Broker,
    cid: int = 1,
    *,
    auth: Authenticator | None = None,
    clock: FakeClock | None = None,
    **limits: int | bool,
) -> tuple[Session, Wire]:
    wire = Wire()
    session = Session(
        cid, broker, wire, SessionSettings(**limits), auth or StaticAuth(), clock  # type: ignore[arg-type]
    )
    wire.session = session
    return session, wire


Feed = Callable[[Session, bytes], None]


def feed_whole(session: Session, data: bytes) -> None:
    session.receive_data(data)


def feed_bytewise(session: Session, data: bytes) -> None:
    for i in range(len(data)):
        session.receive_data(data[i : i + 1])


@pytest.fixture(params=[feed_whole, feed_bytewise], ids=["whole", "bytewise"])
def feed(request: pytest.FixtureRequest) -> Feed:
    return request.param  # type: ignore[no-any-return]


QUIET = b'CONNECT {"verbose":false,"pedantic":true,"headers":true,"no_responders":true}\r\n'


# -- the state table -----------------------------------------------------------------


def test_transition_table_shape() -> None:
    # CLOSED is final: no row leaves it
    assert not [key for key in TRANSITIONS if key[0] is State.CLOSED]
    # only a CONNECT leads to CONNECTED, and an auth timeout only matters before it
    assert {k for k, v in TRANSITIONS.items() if v is State.CONNECTED} == {
        (State.EXPECT_CONNECT, Event.CONNECT_ACCEPTED),
        (State.CONNECTED, Event.CONNECT_ACCEPTED),
    }
    assert (State.CONNECTED, Event.AUTH_TIMEOUT) not in TRANSITIONS
    # every other event closes an open session
    for state in (State.EXPECT_CONNECT, State.CONNECTED):
        for event in Event:
            if event not in (Event.CONNECT_ACCEPTED, Event.AUTH_TIMEOUT):
                assert TRANSITIONS[(state, event)] is State.CLOSED
    assert DROPS_OUTPUT == {Event.SLOW_CONSUMER, Event.TRANSPORT_LOST, Event.TRANSPORT_FAILED}


def test_starts_expecting_connect() -> None:
    session, wire = open_session(Broker())
    assert session.state is State.EXPECT_CONNECT
    info = session.greeting({"server_id": "N1", "max_payload": 10})
    assert info == b'INFO {"server_id":"N1","max_payload":10}\r\n'
    assert wire.take() == b""


# -- CONNECT and options -----------------------------------------------------------------


def test_defaults_are_verbose(feed: Feed) -> None:
    session, wire = open_session(Broker())
    feed(session, b"CONNECT {}\r\nSUB a 1\r\nPING\r\n")
    assert session.state is State.CONNECTED
    assert wire.take() == b"+OK\r\n+OK\r\nPONG\r\n"
    assert (session.verbose, session.pedantic, session.echo, session.headers) == (
        True, True, True, False,
    )


def test_connect_options_are_kept(feed: Feed) -> None:
    session, wire = open_session(Broker())
    feed(
        session,
        b'CONNECT {"verbose":false,"pedantic":false,"echo":false,"headers":true,'
        b'"no_responders":true,"name":"n","lang":"python3","version":"2.0","user":"bob"}\r\n',
    )
    assert wire.take() == b""
    assert (session.verbose, session.pedantic, session.echo) == (False, False, False)
    assert (session.headers, session.no_responders) == (True, True)
    assert (session.name, session.lang, session.version, session.user) == (
        "n", "python3", "2.0", "bob",
    )


def test_ops_before_connect_without_auth_use_defaults(feed: Feed) -> None:
    broker = Broker()
    session, wire = open_session(broker)
    feed(session, b"SUB a 1\r\nPUB a 2\r\nhi\r\nPING\r\n")
    assert session.state is State.EXPECT_CONNECT
    assert wire.take() == b"+OK\r\n+OK\r\nMSG a 1 2\r\nhi\r\nPONG\r\n"


def test_no_responders_needs_headers(feed: Feed) -> None:
    broker = Broker()
    session, wire = open_session(broker)
    feed(session, b'CONNECT {"verbose":false,"no_responders":true}\r\nPING\r\n')
    assert session.state is State.CLOSED
    assert wire.take() == b"-ERR 'no responders requires headers support'\r\n"
    assert wire.closes == [Close(Event.CONNECT_REFUSED, "no responders requires headers support")]


# -- auth -----------------------------------------------------------------------------------


def test_auth_op_before_connect_is_a_violation(feed: Feed) -> None:
    broker = Broker()
    session, wire = open_session(broker, auth=StaticAuth(token="s3cret"))
    feed(session, b"SUB a 1\r\nPING\r\n")
    assert wire.take() == b"-ERR 'Authorization Violation'\r\n"
    assert wire.closes == [Close(Event.AUTH_VIOLATION, P.ERR_AUTH)]
    assert broker.num_subscriptions == 0


def test_auth_refused_connect(feed: Feed) -> None:
    session, wire = open_session(Broker(), auth=StaticAuth(user="u", password="p"))
    feed(session, b'CONNECT {"user":"u","pass":"wrong"}\r\nPING\r\n')
    assert session.state is State.CLOSED
    assert session.identity is None
    assert wire.take() == b"-ERR 'Authorization Violation'\r\n"


def test_auth_accepted_connect(feed: Feed) -> None:
    session, wire = open_session(Broker(), auth=StaticAuth(user="u", password="p"))
    feed(session, b'CONNECT {"user":"u","pass":"p"}\r\nPING\r\n')
    assert session.state is State.CONNECTED
    assert session.user == "u"
    assert wire.take() == b"+OK\r\nPONG\r\n"


def test_auth_timeout_only_before_connect() -> None:
    waiting, wire = open_session(Broker(), auth=StaticAuth(token="t"))
    waiting.auth_timeout()
    assert wire.take() == b"-ERR 'Authentication Timeout'\r\n"
    assert wire.closes == [Close(Event.AUTH_TIMEOUT, P.ERR_AUTH_TIMEOUT)]

    connected, wire = open_session(Broker(), auth=StaticAuth(token="t"))
    connected.receive_data(b'CONNECT {"verbose":false,"auth_token":"t"}\r\n')
    connected.auth_timeout()
    assert connected.state is State.CONNECTED
    assert wire.closes == []


def test_second_connect_is_authenticated_again() -> None:
    session, wire = open_session(Broker(), auth=StaticAuth(token="t"))
    session.receive_data(b'CONNECT {"verbose":false,"auth_token":"t"}\r\n')
    session.receive_data(b'CONNECT {"verbose":false,"auth_token":"x"}\r\n')
    assert session.state is State.CLOSED
    assert wire.take() == b"-ERR 'Authorization Violation'\r\n"


# -- publish, subscribe, deliver -------------------------------------------------------------


def test_pub_sub_between_sessions(feed: Feed) -> None:
    broker = Broker()
    sub, sub_wire = open_session(broker, 1)
    pub, pub_wire = open_session(broker, 2)
    feed(sub, QUIET + b"SUB foo.* 7\r\nSUB foo.* q 8\r\n")
    feed(pub, QUIET + b"PUB foo.bar reply.x 5\r\nhello\r\nHPUB foo.h 12 14\r\nNATS/1.0\r\n\r\nhi\r\n")
    assert pub_wire.take() == b""
    assert sub_wire.take() == (
        b"MSG foo.bar 7 reply.x 5\r\nhello\r\n"
        b"MSG foo.bar 8 reply.x 5\r\nhello\r\n"
        b"HMSG foo.h 7 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"
        b"HMSG foo.h 8 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"
    )
    assert (pub.in_msgs, pub.in_bytes) == (2, 5 + 14)
    assert (sub.out_msgs, sub.out_bytes) == (4, 2 * 5 + 2 * 14)


def test_headers_are_stripped_for_a_client_without_headers(feed: Feed) -> None:
    broker = Broker()
    sub, sub_wire = open_session(broker, 1)
    pub, _ = open_session(broker, 2)
    feed(sub, b'CONNECT {"verbose":false}\r\nSUB h 1\r\n')
    feed(pub, QUIET + b"HPUB h 12 14\r\nNATS/1.0\r\n\r\nhi\r\n")
    assert sub_wire.take() == b"MSG h 1 2\r\nhi\r\n"


def test_hpub_without_headers_closes_silently(feed: Feed) -> None:
    session, wire = open_session(Broker())
    feed(session, b'CONNECT {"verbose":false}\r\nHPUB h 12 14\r\nNATS/1.0\r\n\r\nhi\r\nPING\r\n')
    assert session.state is State.CLOSED
    assert wire.take() == b""
    assert wire.closes == [Close(Event.PROTOCOL_ERROR, None)]


def test_pedantic_invalid_publish_subject(feed: Feed) -> None:
    broker = Broker()
    sub, sub_wire = open_session(broker, 1)
    feed(sub, b'CONNECT {"verbose":false}\r\nSUB > 1\r\n')
    pub, wire = open_session(broker, 2)
    feed(pub, b"CONNECT {}\r\nPUB a.* 1\r\nx\r\n")
    assert wire.take() == b"+OK\r\n-ERR 'Invalid Publish Subject'\r\n+OK\r\n"
    assert sub_wire.take() == b""
    assert pub.state is State.CONNECTED
    # not pedantic: routed as given
    feed(pub, b'CONNECT {"verbose":false,"pedantic":false}\r\nPUB a.* 1\r\nx\r\n')
    assert sub_wire.take() == b"MSG a.* 1 1\r\nx\r\n"


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"SUB a..b 1\r\n", P.ERR_INVALID_SUBJECT),
        (b"SUB a.>.b 1\r\n", P.ERR_INVALID_SUBJECT),
        (b"SUB a q.>x 1\r\n", None),  # a queue name with '>' in it is fine
    ],
)
def test_invalid_sub_keeps_connection_open(feed: Feed, line: bytes, error: str | None) -> None:
    broker = Broker()
    session, wire = open_session(broker)
    feed(session, b"CONNECT {}\r\n" + line + b"PING\r\n")
    expected = b"+OK\r\n" + (P.encode_err(error) if error else b"+OK\r\n") + b"PONG\r\n"
    assert wire.take() == expected
    assert session.state is State.CONNECTED
    assert broker.num_subscriptions == (0 if error else 1)


def test_duplicate_sid_is_ignored(feed: Feed) -> None:
    broker = Broker()
    session, wire = open_session(broker)
    feed(session, b"CONNECT {}\r\nSUB a 1\r\nSUB b 1\r\nPUB b 1\r\nx\r\n")
    assert wire.take() == b"+OK\r\n+OK\r\n+OK\r\n+OK\r\n"
    assert broker.num_subscriptions == 1


def test_unsub_with_max_auto_unsubscribes(feed: Feed) -> None:
    broker = Broker()
    session, wire = open_session(broker)
    feed(session, QUIET + b"SUB a 1\r\nUNSUB 1 2\r\n" + b"PUB a 1\r\nx\r\n" * 3 + b"PING\r\n")
    assert wire.take() == b"MSG a 1 1\r\nx\r\n" * 2 + b"PONG\r\n"
    assert session.subs == {}
    assert broker.num_subscriptions == 0


def test_unsub_now_and_unknown_sid(feed: Feed) -> None:
    broker = Broker()
    session, wire = open_session(broker)
    feed(session, b"CONNECT {}\r\nSUB a 1\r\nUNSUB 1\r\nUNSUB 99\r\nPUB a 1\r\nx\r\n")
    assert wire.take() == b"+OK\r\n" * 5
    assert broker.num_subscriptions == 0


def test_echo_off_suppresses_own_messages(feed: Feed) -> None:
    broker = Broker()
    me, my_wire = open_session(broker, 1)
    other, other_wire = open_session(broker, 2)
    feed(me, b'CONNECT {"verbose":false,"echo":false}\r\nSUB e 1\r\n')
    feed(other, b'CONNECT {"verbose":false}\r\nSUB e 1\r\n')
    feed(me, b"PUB e 1\r\nx\r\n")
    feed(other, b"PUB e 1\r\ny\r\n")
    assert my_wire.take() == b"MSG e 1 1\r\ny\r\n"
    assert other_wire.take() == b"MSG e 1 1\r\nx\r\nMSG e 1 1\r\ny\r\n"


def test_no_responders_status(feed: Feed) -> None:
    session, wire = open_session(Broker())
    feed(session, QUIET + b"SUB _INBOX.1 9\r\nPUB nobody _INBOX.1 2\r\nhi\r\n")
    assert wire.take() == b"HMSG _INBOX.1 9 16 16\r\nNATS/1.0 503\r\n\r\n\r\n"


def test_ping_pong_accounting() -> None:
    session, wire = open_session(Broker(), max_pings_out=2)
    session.receive_data(QUIET)
    session.ping_due()
    session.ping_due()
    assert session.pings_out == 2
    session.receive_data(b"PONG\r\n")
    assert session.pings_out == 0
    session.ping_due()
    session.ping_due()
    session.ping_due()  # a third unanswered ping is one too many
    assert wire.take() == b"PING\r\n" * 4 + b"-ERR 'Stale Connection'\r\n"
    assert wire.closes == [Close(Event.STALE, P.ERR_STALE)]


# -- output batching and slow consumers ------------------------------------------------------


def test_output_ready_once_per_batch() -> None:
    broker = Broker()
    sub, wire = open_session(broker, 1)
    pub, _ = open_session(broker, 2)
    sub.receive_data(QUIET + b"SUB a 1\r\n")
    assert wire.ready_calls == 0
    pub.receive_data(QUIET + b"PUB a 1\r\nx\r\n" * 50)
    assert wire.ready_calls == 1
    assert sub.pending_output == 50 * len(b"MSG a 1 1\r\nx\r\n")
    assert wire.take() == b"MSG a 1 1\r\nx\r\n" * 50
    assert sub.pending_output == 0
    pub.receive_data(b"PUB a 1\r\nx\r\n")
    assert wire.ready_calls == 2


def test_slow_consumer_drops_queue_and_says_why() -> None:
    broker = Broker()
    sub, wire = open_session(broker, 1, max_pending=100)
    pub, pub_wire = open_session(broker, 2)
    sub.receive_data(QUIET + b"SUB a 1\r\n")
    pub.receive_data(QUIET + b"PUB a 20\r\n" + b"x" * 20 + b"\r\n" * 1)
    assert sub.state is State.CONNECTED
    pub.receive_data((b"PUB a 20\r\n" + b"x" * 20 + b"\r\n") * 5)
    assert sub.state is State.CLOSED
    assert wire.closes == [Close(Event.SLOW_CONSUMER, P.ERR_SLOW_CONSUMER)]
    assert wire.closes[0].drop_output
    assert wire.take() == b"-ERR 'Slow Consumer'\r\n"
    assert broker.num_subscriptions == 0
    assert pub.state is State.CONNECTED and pub_wire.take() == b""


def _run(count: int, size: int = 4) -> MessageList:
    run = MessageList()
    for i in range(count):
        run.add(f"s.{i}", f"ack.{i}", None, b"x" * size)
    return run


def test_a_run_is_queued_whole_and_counted_once() -> None:
    broker = Broker()
    sub, wire = open_session(broker)
    sub.receive_data(QUIET + b"SUB d 9\r\n")
    broker.publish_run("d", _run(3))
    assert wire.ready_calls == 1 and len(sub._out) == 1  # one piece of output, one wake-up
    assert wire.take() == b"".join(b"MSG s.%d 9 ack.%d 4\r\nxxxx\r\n" % (i, i) for i in range(3))
    assert (sub.out_msgs, sub.out_bytes) == (3, 12)


def test_a_run_past_max_pending_is_a_slow_consumer() -> None:
    broker = Broker()
    sub, wire = open_session(broker, max_pending=100)
    sub.receive_data(QUIET + b"SUB d 9\r\n")
    broker.publish_run("d", _run(2))  # 2 x 24 bytes
    assert sub.state is State.CONNECTED
    broker.publish_run("d", _run(3))  # 48 + 72 > 100
    assert wire.closes == [Close(Event.SLOW_CONSUMER, P.ERR_SLOW_CONSUMER)]
    assert wire.take() == b"-ERR 'Slow Consumer'\r\n"
    broker.publish_run("d", _run(1))  # closed: nothing more, nothing raised
    assert wire.take() == b""


def test_a_run_meets_deny_filters_and_response_permissions_per_message() -> None:
    clock = FakeClock()
    broker = Broker()
    auth = _users(
        s=Permissions(subscribe=SubjectPermission(("s.>", "d"), ("s.1",))),
        r=Permissions(publish=SubjectPermission(("nothing",)), responses=ResponsePermission(1, 0)),
    )
    denied, denied_wire = _login(broker, "s", auth)
    denied.receive_data(b"SUB s.* 9\r\n")  # a wildcard over a deny filter: checked per delivery
    broker.publish_run("s.x", _run(3))  # routed by s.x, shown as s.0, s.1, s.2
    assert denied_wire.take() == b"MSG s.0 9 ack.0 4\r\nxxxx\r\nMSG s.2 9 ack.2 4\r\nxxxx\r\n"
    responder, responder_wire = _login(broker, "r", auth, clock=clock, cid=2)
    responder.receive_data(b"SUB r 9\r\n")
    broker.publish_run("r", _run(2))
    responder_wire.take()
    responder.receive_data(b"PUB ack.1 0\r\n\r\nPUB ack.2 0\r\n\r\n")  # ack.1 was delivered
    assert responder_wire.take() == b"-ERR 'Permissions Violation for Publish to \"ack.2\"'\r\n"


def test_slow_consumer_reported_by_the_transport() -> None:
    session, wire = open_session(Broker())
    session.receive_data(b"CONNECT {}\r\n")
    session.slow_consumer()
    assert wire.take() == b"-ERR 'Slow Consumer'\r\n"


# -- protocol errors and closing -----------------------------------------------------------


@pytest.mark.parametrize(
    ("garbage", "written"),
    [
        (b"BOGUS\r\n", b"-ERR 'Unknown Protocol Operation'\r\n"),
        (b"PUB a 2000000\r\n", b"-ERR 'Maximum Payload Violation'\r\n"),
        (b"SUB a\r\n", b""),  # bad arguments of a known op: closed without -ERR
    ],
)
def test_protocol_error_applies_earlier_ops_then_closes(
    feed: Feed, garbage: bytes, written: bytes
) -> None:
    broker = Broker()
    watcher, watcher_wire = open_session(broker, 1)
    feed(watcher, QUIET + b"SUB a 1\r\n")
    session, wire = open_session(broker, 2)
    feed(session, QUIET + b"SUB mine 1\r\nPUB a 2\r\nok\r\n" + garbage + b"PUB a 2\r\nno\r\n")
    assert watcher_wire.take() == b"MSG a 1 2\r\nok\r\n"
    assert wire.take() == written
    assert wire.closes == [Close(Event.PROTOCOL_ERROR, written[6:-3].decode() or None)]
    assert session.state is State.CLOSED
    assert broker.num_subscriptions == 1  # the closed session's subscription is gone


def test_close_is_final_and_happens_once() -> None:
    broker = Broker()
    session, wire = open_session(broker)
    session.receive_data(QUIET + b"SUB a 1\r\nSUB b 2\r\n")
    session.close()
    assert wire.closes == [Close(Event.SHUTDOWN, None)]
    assert broker.num_subscriptions == 0 and session.subs == {}
    # nothing moves a closed session
    session.receive_data(b"PING\r\n")
    session.ping_due()
    session.auth_timeout()
    session.slow_consumer()
    session.transport_lost()
    session.send(b"PONG\r\n")
    assert wire.take() == b""
    assert len(wire.closes) == 1
    assert session.state is State.CLOSED


def test_server_close_keeps_queued_output() -> None:
    session, wire = open_session(Broker())
    session.receive_data(b"CONNECT {}\r\nPING\r\n")
    session.close()
    assert wire.take() == b"+OK\r\nPONG\r\n"


@pytest.mark.parametrize("event", [Event.TRANSPORT_LOST, Event.TRANSPORT_FAILED])
def test_transport_end_drops_output(event: Event) -> None:
    broker = Broker()
    session, wire = open_session(broker)
    session.receive_data(b"CONNECT {}\r\nSUB a 1\r\nPING\r\n")
    if event is Event.TRANSPORT_LOST:
        session.transport_lost()
    else:
        session.transport_failed()
    assert wire.closes == [Close(event, None)]
    assert wire.take() == b""
    assert broker.num_subscriptions == 0


# -- whole versus one byte at a time, and any input ------------------------------------------------

SCRIPT = (
    b'CONNECT {"verbose":true,"headers":true,"no_responders":true}\r\n'
    b"SUB a.* 1\r\nSUB a.b q 2\r\nsub\ta.c\t3\r\nPUB a.b r 3\r\nabc\r\n"
    b"HPUB a.c 18 20\r\nNATS/1.0\r\nX: 1\r\n\r\nhi\r\nping\nUNSUB 1 1\r\nPUB a.b 0\r\n\r\n"
    b"PUB a.b 1\r\nz\r\nPONG\r\nINFO {}\r\n+OK\r\nPUB none _INBOX.x 0\r\n\r\nPING\r\n"
)


def test_script_output_does_not_depend_on_chunking() -> None:
    outputs = []
    for chunk in (len(SCRIPT), 1, 2, 7, 64):
        session, wire = open_session(Broker())
        for i in range(0, len(SCRIPT), chunk):
            session.receive_data(SCRIPT[i : i + chunk])
        outputs.append(wire.take())
    assert outputs[0].startswith(b"+OK\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\nMSG a.b 1 r 3\r\nabc\r\n")
    assert outputs[0].endswith(b"PONG\r\n")
    assert all(out == outputs[0] for out in outputs)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=8), st.booleans())
def test_any_input_is_applied_or_closes(chunks: list[bytes], auth: bool) -> None:
    """Whatever a client sends, the session never raises; it stays open or
    closes exactly once with a recorded reason."""
    broker = Broker()
    session, wire = open_session(broker, auth=StaticAuth(token="t") if auth else None)
    for chunk in [QUIET, *chunks]:
        session.receive_data(chunk)
    assert len(wire.closes) == (1 if session.state is State.CLOSED else 0)
    if session.state is State.CLOSED:
        assert broker.num_subscriptions == 0


# -- permissions and limits -------------------------------------------------------------------


def _users(**perms: Permissions) -> UsersAuth:
    return UsersAuth(tuple(User(name, "pw", p) for name, p in perms.items()))


def _login(broker: Broker, user: str, auth: Authenticator, **kw: object) -> tuple[Session, Wire]:
    session, wire = open_session(broker, auth=auth, **kw)  # type: ignore[arg-type]
    session.receive_data(b'CONNECT {"verbose":false,"user":"%s","pass":"pw"}\r\n' % user.encode())
    assert session.state is State.CONNECTED, wire.take()
    return session, wire


def test_publish_permissions_are_cached_and_bounded() -> None:
    from jetstream_server.core.permissions import PUB_CACHE_MAX

    auth = _users(p=Permissions(SubjectPermission(("ok.>",), ("ok.no",))))
    session, wire = _login(Broker(), "p", auth)
    session.receive_data(b"PUB ok.yes 0\r\n\r\nPUB ok.no 0\r\n\r\nPUB other 0\r\n\r\n")
    assert wire.take() == (
        b"-ERR 'Permissions Violation for Publish to \"ok.no\"'\r\n"
        b"-ERR 'Permissions Violation for Publish to \"other\"'\r\n"
    )
    assert session._pub_cache == {"ok.yes": True, "ok.no": False, "other": False}
    for i in range(PUB_CACHE_MAX + 10):
        session.receive_data(b"PUB ok.%d 0\r\n\r\n" % i)
    assert len(session._pub_cache) <= PUB_CACHE_MAX
    assert session.state is State.CONNECTED and wire.take() == b""


def test_unrestricted_users_pay_nothing() -> None:
    session, _ = _login(Broker(), "free", _users(free=Permissions()))
    assert session._pub_cache is None and session._sub_rules is None
    assert session._replies is None and session._deny_cache is None


def test_allow_responses_count_and_expire() -> None:
    clock = FakeClock()
    broker = Broker()
    auth = _users(
        svc=Permissions(subscribe=SubjectPermission(("svc",)), responses=ResponsePermission(2, 1.0)),
        cli=Permissions(),
    )
    svc, svc_wire = _login(broker, "svc", auth, clock=clock)
    cli, cli_wire = _login(broker, "cli", auth, cid=2)
    svc.receive_data(b"SUB svc 1\r\n")
    cli.receive_data(b"SUB inbox.> 1\r\nPUB svc inbox.1 1\r\na\r\nPUB svc inbox.2 1\r\nb\r\n")
    svc_wire.take()
    svc.receive_data(b"PUB inbox.1 1\r\nx\r\nPUB inbox.1 1\r\ny\r\nPUB inbox.1 1\r\nz\r\n")
    assert svc_wire.take() == b"-ERR 'Permissions Violation for Publish to \"inbox.1\"'\r\n"
    clock.advance(1.5)  # past `expires`: the second reply subject is gone
    svc.receive_data(b"PUB inbox.2 1\r\nw\r\n")
    assert svc_wire.take() == b"-ERR 'Permissions Violation for Publish to \"inbox.2\"'\r\n"
    assert cli_wire.take() == b"MSG inbox.1 1 1\r\nx\r\nMSG inbox.1 1 1\r\ny\r\n"


def test_subscribe_violation_and_deny_filter() -> None:
    broker = Broker()
    auth = _users(
        s=Permissions(subscribe=SubjectPermission(("a.>",), ("a.secret", "a.q grp"))),
        p=Permissions(),
    )
    sub, wire = _login(broker, "s", auth)
    pub, _ = _login(broker, "p", auth, cid=2)
    sub.receive_data(b"SUB b 1\r\nSUB a.q grp 2\r\nSUB a.* 3\r\nSUB a.q other 4\r\n")
    assert wire.take() == (
        b"-ERR 'Permissions Violation for Subscription to \"b\"'\r\n"
        b"-ERR 'Permissions Violation for Subscription to \"a.q\" using queue \"grp\"'\r\n"
    )
    pub.receive_data(b"PUB a.secret 1\r\ns\r\nPUB a.open 1\r\no\r\nPUB a.q 1\r\nq\r\n")
    assert wire.take() == b"MSG a.open 3 1\r\no\r\nMSG a.q 3 1\r\nq\r\nMSG a.q 4 1\r\nq\r\n"


def test_max_subscriptions_keeps_the_connection() -> None:
    session, wire = open_session(Broker(), max_subscriptions=1)
    session.receive_data(b'CONNECT {"verbose":true}\r\nSUB a 1\r\nSUB b 2\r\nPING\r\n')
    assert wire.take() == b"+OK\r\n+OK\r\n-ERR 'maximum subscriptions exceeded'\r\nPONG\r\n"
    assert session.state is State.CONNECTED and list(session.subs) == ["1"]


def test_first_byte_must_start_connect_when_credentials_are_required() -> None:
    session, wire = open_session(Broker(), auth=StaticAuth(token="t"))
    session.receive_data(b"PUB a 1000000\r\n")
    assert wire.closes == [Close(Event.AUTH_VIOLATION, P.ERR_AUTH)]
    assert session.parser.buffered == 0
    lower, wire = open_session(Broker(), auth=StaticAuth(token="t"))
    lower.receive_data(b'c')
    lower.receive_data(b'onnect {"verbose":false,"auth_token":"t"}\r\n')
    assert lower.state is State.CONNECTED


def test_no_auth_user_applies_ops_before_connect_and_stops_the_timer() -> None:
    auth = UsersAuth(
        (User("guest", "", Permissions(SubjectPermission(("pub.>",)))), User("admin", "pw")),
        no_auth_user="guest",
    )
    session, wire = open_session(Broker(), auth=auth)
    assert session.awaiting_connect
    session.receive_data(b"PUB pub.x 0\r\n\r\nPUB priv 0\r\n\r\n")
    assert not session.awaiting_connect and session.identity == auth.anonymous
    assert wire.take() == b"+OK\r\n-ERR 'Permissions Violation for Publish to \"priv\"'\r\n"
    session.auth_timeout()
    assert wire.closes == []
    session.receive_data(b'CONNECT {"verbose":false,"user":"admin","pass":"pw"}\r\n')
    assert session.identity == Identity("admin")
    session.receive_data(b"PUB priv 0\r\n\r\n")
    assert wire.take() == b""


def test_auth_timeout_without_auth_closes_a_silent_session() -> None:
    silent, wire = open_session(Broker())
    silent.auth_timeout()
    assert wire.closes == [Close(Event.AUTH_TIMEOUT, P.ERR_AUTH_TIMEOUT)]
    busy, wire = open_session(Broker())
    busy.receive_data(b"PING\r\n")
    busy.auth_timeout()
    assert wire.closes == [] and wire.take() == b"PONG\r\n"


def test_max_connections_refusal() -> None:
    session, wire = open_session(Broker())
    session.max_connections_exceeded()
    assert wire.closes == [Close(Event.MAX_CONNECTIONS, "maximum connections exceeded")]
    assert wire.take() == b"-ERR 'maximum connections exceeded'\r\n"


def test_greeting_carries_a_nonce_for_nkey_users() -> None:
    import json

    from jetstream_server.core.auth import NkeyUser

    auth = UsersAuth((), (NkeyUser("U" + "A" * 55),))
    session, _ = open_session(Broker(), auth=auth)
    info = json.loads(session.greeting({"server_id": "x"})[5:])
    assert len(info["nonce"]) == 15 and info["nonce"] == session.nonce
    plain, _ = open_session(Broker())
    assert "nonce" not in json.loads(plain.greeting({})[5:])


def test_sessions_use_their_accounts_broker_and_subscriptions_move_with_a_new_connect() -> None:
    brokers = {"$G": Broker(), "A": Broker(), "B": Broker()}
    auth = UsersAuth((User("a", "pa", account="A"), User("b", "pb", account="B")))

    def connect(cid: int) -> tuple[Session, Wire]:
        wire = Wire()
        session = Session(cid, brokers["$G"], wire, SessionSettings(), auth, None, brokers)
        wire.session = session
        return session, wire

    sub, sub_wire = connect(1)
    pub_b, _ = connect(2)
    sub.receive_data(b'CONNECT {"verbose":false,"user":"a","pass":"pa"}\r\nSUB x 7\r\nUNSUB 7 1\r\nSUB y 8\r\n')
    pub_b.receive_data(b'CONNECT {"verbose":false,"user":"b","pass":"pb"}\r\nPUB x 2\r\nb1\r\n')
    assert sub_wire.take() == b""  # B's message stays in B
    assert brokers["A"].num_subscriptions == 2 and brokers["B"].num_subscriptions == 0
    # a second CONNECT as a user of B: the subscriptions (and UNSUB's max) move to B
    sub.receive_data(b'CONNECT {"verbose":false,"user":"b","pass":"pb"}\r\n')
    assert brokers["A"].num_subscriptions == 0 and brokers["B"].num_subscriptions == 2
    pub_b.receive_data(b"PUB x 2\r\nb2\r\nPUB x 2\r\nb3\r\n")
    assert sub_wire.take() == b"MSG x 7 2\r\nb2\r\n"  # the max of 1 still holds
    assert brokers["B"].num_subscriptions == 1


# -- bounded turns (issue 24) ------------------------------------------------------------


def test_a_large_read_is_applied_in_bounded_turns() -> None:
    from jetstream_server.core.session import OPS_TURN_BYTES, op_cost

    broker = Broker()
    session, wire = open_session(broker)
    subs = b"".join(b"SUB s.%d %d\r\n" % (i, i) for i in range(20_000))
    session.receive_data(QUIET + subs + b"PING\r\n")
    turns = 0
    applied = [len(session.subs)]
    while session.holding:
        session.continue_ops()
        turns += 1
        applied.append(len(session.subs))
    # each turn applied about OPS_TURN_BYTES of ops, in order, PONG last
    per_turn = OPS_TURN_BYTES // op_cost(P.Sub("s.0", None, "0")) + 1
    assert all(b - a <= per_turn for a, b in itertools.pairwise(applied))
    assert turns >= len(subs) // OPS_TURN_BYTES
    assert len(session.subs) == 20_000 and wire.take() == b"PONG\r\n"


def test_held_ops_come_before_a_later_read_and_the_error_after_them() -> None:
    session, wire = open_session(Broker())
    session.receive_data(QUIET + b"".join(b"SUB a.%d %d\r\n" % (i, i) for i in range(10_000)))
    assert session.holding
    session.receive_data(b"PING\r\nBAD\r\n")  # queued behind the held ops
    assert not session.closed
    sizes = []
    while session.holding:
        sizes.append(len(session.subs))
        session.continue_ops()
    # every SUB first (the last turn applied the rest), then PING, then the error
    assert max(sizes) > 10_000 - 2_000 and session.closed
    assert wire.take() == b"PONG\r\n-ERR 'Unknown Protocol Operation'\r\n"


def test_closing_retires_subscriptions_in_bounded_turns() -> None:
    from jetstream_server.core.routing import RETIRE_STEP

    broker = Broker()
    turns: list[Callable[[], None]] = []
    broker.schedule = turns.append
    session, _ = open_session(broker)
    session.receive_data(QUIET)
    for i in range(3 * RETIRE_STEP + 5):
        session.receive_data(b"SUB r.%d %d\r\n" % (i, i))
    other, other_wire = open_session(broker, 2)
    other.receive_data(QUIET + b"SUB r.1 1\r\n")
    assert broker.num_subscriptions == 3 * RETIRE_STEP + 6
    session.close()
    # none of the closed client's subscriptions counts or receives from now on
    assert broker.num_subscriptions == 1
    broker.publish("r.1", None, None, b"x")
    assert other_wire.take() == b"MSG r.1 1 1\r\nx\r\n"
    sizes = [len(broker.index)]
    while turns:
        turns.pop(0)()
        sizes.append(len(broker.index))
    assert [a - b for a, b in itertools.pairwise(sizes)] == [RETIRE_STEP] * 3 + [5]
    assert len(broker.index) == 1
