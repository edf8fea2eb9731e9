"""The pipelined publisher against both servers: acks, dedup, errors, reconnect."""

from __future__ import annotations

import threading

import pytest
from sink_helpers import create_stream, read_stream, stream_info

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import LeanConnection, NatsError, NatsTimeoutError
from spark_jetstream.options import ConnectionOptions
from spark_jetstream.write.publisher import Publisher, PublishError, PublishTimeoutError


def headers(msg_id: str, extra: bytes = b"") -> bytes:
    return b"NATS/1.0\r\nNats-Msg-Id: " + msg_id.encode() + b"\r\n" + extra + b"\r\n"


def publish(url: str, subjects: list[bytes], ids: list[str], payloads: list[bytes], **kw: object) -> Publisher:
    pub = Publisher(ConnectionOptions(servers=(url,)), **kw)  # type: ignore[arg-type]
    try:
        pub.publish_many(subjects, [headers(i) for i in ids], payloads)
        pub.flush()
    finally:
        pub.close()
    return pub


def test_window_smaller_than_batch_every_message_acked_in_order(server: ServerProcess) -> None:
    create_stream(server.url, "P", ["p.>"])
    n = 3000
    ids = [f"id-{i}" for i in range(n)]
    pub = publish(server.url, [b"p.a"] * n, ids, [b"%d" % i for i in range(n)], max_in_flight=64)
    assert pub.stats.published == n and pub.stats.duplicates == 0
    msgs = read_stream(server.url, "P")
    assert [m.data for m in msgs] == [b"%d" % i for i in range(n)]
    assert [m.msg_id for m in msgs] == ids


def test_same_ids_again_are_acked_as_duplicates_and_not_stored(server: ServerProcess) -> None:
    create_stream(server.url, "D", ["d"])
    ids = [f"x{i}" for i in range(500)]
    first = publish(server.url, [b"d"] * 500, ids, [b"v"] * 500, max_in_flight=100)
    again = publish(server.url, [b"d"] * 500, ids, [b"v"] * 500, max_in_flight=100)
    assert (first.stats.published, first.stats.duplicates) == (500, 0)
    assert (again.stats.published, again.stats.duplicates) == (0, 500)
    assert stream_info(server.url, "D")["state"]["messages"] == 500


def test_subject_without_stream_fails_naming_the_subject(server: ServerProcess) -> None:
    create_stream(server.url, "E", ["e"])
    with pytest.raises(PublishError, match="no stream captures subject 'nowhere.x'"):
        publish(server.url, [b"e", b"nowhere.x"], ["a", "b"], [b"1", b"2"])


def test_expected_stream_mismatch_fails_with_the_server_error(server: ServerProcess) -> None:
    create_stream(server.url, "A1", ["a1"])
    pub = Publisher(ConnectionOptions(servers=(server.url,)))
    try:
        pub.publish_many([b"a1"], [headers("m1", b"Nats-Expected-Stream: OTHER\r\n")], [b"x"])
        with pytest.raises(PublishError, match=r"'m1'.*'a1'.*(?i:expected stream).*10060"):
            pub.flush()
    finally:
        pub.close()
    assert stream_info(server.url, "A1")["state"]["messages"] == 0


def test_message_over_stream_limit_fails_with_err_code(server: ServerProcess) -> None:
    create_stream(server.url, "M", ["m"], max_msg_size=100)
    with pytest.raises(PublishError, match="10054"):
        publish(server.url, [b"m"], ["big"], [b"z" * 500])


def test_message_over_max_payload_fails_before_sending(server: ServerProcess) -> None:
    create_stream(server.url, "B", ["b"])
    with pytest.raises(PublishError, match="max_payload"):
        publish(server.url, [b"b"], ["huge"], [b"z" * (2 * 1024 * 1024)])
    assert stream_info(server.url, "B")["state"]["messages"] == 0


def test_no_ack_times_out_naming_the_message(server: ServerProcess) -> None:
    # a plain subscriber that never replies: the publish has a responder but no ack
    with LeanConnection.connect(ConnectionOptions(servers=(server.url,))) as silent:
        silent.subscribe("quiet")
        silent.flush()
        with pytest.raises(PublishTimeoutError, match="'q1'.*'quiet'"):
            publish(server.url, [b"quiet"], ["q1"], [b"x"], ack_timeout_s=0.5)


def test_server_restart_mid_publish_reconnects_and_stores_each_once(server: ServerProcess) -> None:
    create_stream(server.url, "R", ["r"])
    n = 2000
    pub = Publisher(ConnectionOptions(servers=(server.url,)), max_in_flight=4096, ack_timeout_s=20)
    try:
        pub.publish_many([b"r"] * 1000, [headers(f"r{i}") for i in range(1000)], [b"v"] * 1000)
        server.restart()
        pub.publish_many([b"r"] * 1000, [headers(f"r{i}") for i in range(1000, n)], [b"v"] * 1000)
        stats = pub.flush()
    finally:
        pub.close()
    assert stats.reconnects >= 1
    assert stats.published + stats.duplicates == n
    msgs = read_stream(server.url, "R")
    assert sorted(m.msg_id or "" for m in msgs) == sorted(f"r{i}" for i in range(n))


def test_no_server_fails_after_the_ack_timeout_naming_the_servers() -> None:
    with pytest.raises(PublishError, match=r"could not connect to nats://127.0.0.1:1 within ackTimeout=0.3s"):
        Publisher(ConnectionOptions(servers=("nats://127.0.0.1:1",), connect_timeout_s=0.2), ack_timeout_s=0.3)


class LossyResponder:
    """A real subscriber standing in for a stream leader that dies with messages in flight:
    it drops the first copy of each message and acks later copies (deduplicated by
    Nats-Msg-Id, as a stream would), counting every copy it gets. With `first_stored` the
    first copy counts as stored (its ack was lost), so later copies are duplicates. With
    `in_process` the first copy is answered as a cluster leader answers a copy whose twin is
    still being replicated: `duplicate message id is in process` (409, err_code 10158)."""

    IN_PROCESS = (b'{"error":{"code":409,"err_code":10158,"description":"duplicate message id is in process"},'
                  b'"stream":"LOSSY","seq":0}')

    def __init__(self, url: str, subject: str, *, first_stored: bool = False, in_process: bool = False) -> None:
        self.first_stored = first_stored  # the first copy was stored: later ones are duplicates
        self.in_process = in_process
        self.conn = LeanConnection.connect(ConnectionOptions(servers=(url,)))
        self.sid = self.conn.subscribe(subject)
        self.conn.flush()
        self.copies: dict[bytes, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        stored = 0
        while not self.stop.is_set():
            try:
                frames = self.conn.frames_within(0.05)
            except NatsTimeoutError:
                continue
            except (NatsError, OSError):
                return
            for kind, _subject, sid, reply, hdr, _payload in frames:
                if kind != b"MSG" or sid != self.sid:
                    continue
                msg_id = hdr.split(b"Nats-Msg-Id: ")[1].split(b"\r\n")[0] if b"Nats-Msg-Id: " in hdr else b""
                self.copies[msg_id] = self.copies.get(msg_id, 0) + 1
                if self.copies[msg_id] == 1 and self.in_process:
                    self.conn.publish(reply.decode(), self.IN_PROCESS)
                elif self.copies[msg_id] == 2 and not self.first_stored:
                    stored += 1
                    self.conn.publish(reply.decode(), b'{"stream":"LOSSY","seq":%d}' % stored)
                elif self.copies[msg_id] > 1:
                    self.conn.publish(reply.decode(), b'{"stream":"LOSSY","seq":1,"duplicate":true}')

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        self.conn.close()


def test_messages_without_an_answer_are_resent_with_their_ids(server: ServerProcess) -> None:
    """nats-server answers neither a publish its dying stream leader had in flight nor one a
    follower drops during the election: after silence the publisher re-sends (same id)."""
    lossy = LossyResponder(server.url, "lossy")
    try:
        ids = [f"l{i}" for i in range(20)]
        pub = publish(server.url, [b"lossy"] * 20, ids, [b"v"] * 20, ack_timeout_s=10, resend_after_s=0.2)
    finally:
        lossy.close()
    assert pub.stats.published == 20 and pub.stats.resends >= 1
    assert all(lossy.copies[i.encode()] >= 2 for i in ids)


def test_a_resent_message_whose_first_copy_was_stored_is_a_duplicate_of_its_own(server: ServerProcess) -> None:
    """The first copies were stored but their acks lost (a leader killed after storing): the
    re-sent copies are acked as duplicates, counted as the publisher's own (no id collision)."""
    lossy = LossyResponder(server.url, "lossy", first_stored=True)
    try:
        pub = publish(server.url, [b"lossy"] * 5, [f"s{i}" for i in range(5)], [b"v"] * 5,
                      ack_timeout_s=10, resend_after_s=0.2)
    finally:
        lossy.close()
    assert (pub.stats.published, pub.stats.duplicates, pub.stats.resent_duplicates) == (0, 5, 5)


def test_duplicate_in_process_is_resent_until_stored(server: ServerProcess) -> None:
    """nats-server (a cluster) answers a copy whose twin is still being replicated with 409
    "duplicate message id is in process": not a failure, the copy is re-sent a moment later
    (long before a silence would re-send it) and its ack counts."""
    lossy = LossyResponder(server.url, "lossy", in_process=True)
    try:
        ids = [f"p{i}" for i in range(10)]
        pub = publish(server.url, [b"lossy"] * 10, ids, [b"v"] * 10, ack_timeout_s=10, resend_after_s=60)
    finally:
        lossy.close()
    assert (pub.stats.published, pub.stats.resends) == (10, 0)
    assert all(lossy.copies[i.encode()] == 2 for i in ids)


def test_a_message_without_an_id_is_never_resent_on_silence(server: ServerProcess) -> None:
    """Re-sending a message without Nats-Msg-Id could store it twice: it times out instead."""
    lossy = LossyResponder(server.url, "lossy")
    try:
        pub = Publisher(ConnectionOptions(servers=(server.url,)), ack_timeout_s=1.0, resend_after_s=0.1)
        try:
            pub.publish_many([b"lossy"], [b"NATS/1.0\r\n\r\n"], [b"v"])
            with pytest.raises(PublishTimeoutError):
                pub.flush()
        finally:
            pub.close()
    finally:
        lossy.close()
    assert lossy.copies == {b"": 1} and pub.stats.resends == 0


def test_mixed_subjects_header_sizes_and_payload_sizes_are_framed_exactly(server: ServerProcess) -> None:
    # frames are made a chunk at a time: one subject and header size share a format, anything
    # else is framed field by field; a `%` in a subject is data, not a format directive
    create_stream(server.url, "F", ["f.>"])
    n = 600
    subjects = [b"f.one%d" if i < 300 else (b"f.a%s" if i % 3 else b"f.b") for i in range(n)]
    ids = [f"m{i}" if i < 300 else f"mixed-{i}" * (1 + i % 4) for i in range(n)]
    payloads = [b"%d" % i * (1 if i % 50 else 20_000) for i in range(n)]  # some cross the send chunk
    pub = publish(server.url, subjects, ids, payloads, max_in_flight=97)
    assert (pub.stats.published, pub.stats.duplicates) == (n, 0)
    msgs = read_stream(server.url, "F")
    assert [(m.subject.encode(), m.msg_id, m.data) for m in msgs] == list(zip(subjects, ids, payloads, strict=True))


def test_duplicates_among_new_messages_are_counted_apart(server: ServerProcess) -> None:
    create_stream(server.url, "H", ["h"])
    publish(server.url, [b"h"] * 100, [f"h{i}" for i in range(0, 200, 2)], [b"v"] * 100)
    again = publish(server.url, [b"h"] * 200, [f"h{i}" for i in range(200)], [b"v"] * 200, max_in_flight=50)
    assert (again.stats.published, again.stats.duplicates, again.stats.resent_duplicates) == (100, 100, 0)
    assert again.stats.streams == {"H"}


def test_a_row_over_max_payload_inside_a_batch_is_named(server: ServerProcess) -> None:
    create_stream(server.url, "G", ["g"])
    payloads = [b"x"] * 10 + [b"z" * (2 * 1024 * 1024)] + [b"y"] * 10
    with pytest.raises(PublishError, match=r"message 'g-10' to subject 'g' is \d+ bytes.*max_payload"):
        publish(server.url, [b"g"] * 21, [f"g-{i}" for i in range(21)], payloads)
