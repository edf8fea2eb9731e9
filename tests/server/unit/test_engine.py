"""Unit tests of the JetStream engine with the in-memory router double and a FakeClock.

No sockets, no server process: API requests and publishes go through
tests/support/router_double.py; time moves only with FakeClock.advance.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import threading
from array import array
from pathlib import Path

import pytest
from router_double import RouterDouble
from waits import until

from jetstream_server.app.loop_clock import LoopClock
from jetstream_server.core.clock import FakeClock
from jetstream_server.core.headers import encode_headers
from jetstream_server.jetstream.api import streams as streams_api
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings
from jetstream_server.store.base import StoredMessage

API = "$JS.API."


Settings = EngineSettings


class Env:
    def __init__(self, settings: Settings | None = None, clock: FakeClock | None = None) -> None:
        self.clock = clock or FakeClock()
        self.router = RouterDouble()
        self.engine = JetStream(settings or Settings(), self.clock)
        self.engine.start(self.router)

    def api(self, suffix: str, body: object = b"") -> dict:
        return self.router.request_json(API + suffix, body)

    def create(self, **config: object) -> dict:
        config.setdefault("name", "S")
        config.setdefault("subjects", ["s.>"])
        resp = self.api(f"STREAM.CREATE.{config['name']}", config)
        assert "error" not in resp, resp
        return resp

    def pub(self, subject: str, data: bytes = b"x", **headers: str) -> dict:
        hdr = encode_headers({k.replace("_", "-"): v for k, v in headers.items()}) if headers else None
        return self.router.request_json(subject, data, hdr)

    def info(self, name: str = "S", **body: object) -> dict:
        return self.api(f"STREAM.INFO.{name}", body)

    def state(self, name: str = "S") -> dict:
        return self.info(name)["state"]


@pytest.fixture
def env() -> Env:
    return Env()


def test_create_defaults_and_info(env: Env) -> None:
    resp = env.create()
    assert resp["type"] == "io.nats.jetstream.api.v1.stream_create_response"
    cfg = resp["config"]
    assert cfg["max_msgs"] == -1 and cfg["max_bytes"] == -1 and cfg["max_age"] == 0
    assert cfg["duplicate_window"] == 120_000_000_000
    assert cfg["storage"] == "file" and cfg["retention"] == "limits" and cfg["discard"] == "old"
    assert resp["state"]["first_seq"] == 0 and resp["state"]["first_ts"] == "0001-01-01T00:00:00Z"
    assert resp["did_create"] is True
    assert env.info()["config"]["name"] == "S"


def test_publish_ack_and_dedup(env: Env) -> None:
    env.create()
    assert env.pub("s.a") == {"stream": "S", "seq": 1}
    assert env.pub("s.a", Nats_Msg_Id="m1") == {"stream": "S", "seq": 2}
    assert env.pub("s.b", Nats_Msg_Id="m1") == {"stream": "S", "seq": 2, "duplicate": True}
    assert env.state()["messages"] == 2


def test_dedup_window_expires_with_clock(env: Env) -> None:
    env.create(duplicate_window=2_000_000_000)
    env.pub("s.a", Nats_Msg_Id="m1")
    env.clock.advance(3)
    assert env.pub("s.a", Nats_Msg_Id="m1") == {"stream": "S", "seq": 2}


def test_expectations(env: Env) -> None:
    env.create()
    env.pub("s.a", Nats_Msg_Id="id1")
    err = env.pub("s.a", Nats_Expected_Stream="OTHER")
    assert err["error"]["err_code"] == 10060 and err["stream"] == "S" and err["seq"] == 0
    assert env.pub("s.a", Nats_Expected_Last_Sequence="5")["error"]["description"] == "wrong last sequence: 1"
    assert env.pub("s.a", Nats_Expected_Last_Sequence="1")["seq"] == 2
    assert env.pub("s.b", Nats_Expected_Last_Subject_Sequence="0")["seq"] == 3
    err = env.pub("s.b", Nats_Expected_Last_Subject_Sequence="0")
    assert err["error"] == {"code": 400, "err_code": 10071, "description": "wrong last sequence: 3"}
    err = env.pub("s.a", Nats_Expected_Last_Msg_Id="nope")
    assert err["error"]["err_code"] == 10070


def test_max_age_expires_with_fake_clock(env: Env) -> None:
    env.create(max_age=5_000_000_000)
    env.pub("s.a")
    env.clock.advance(3)
    env.pub("s.a")
    env.clock.advance(2.5)
    st = env.state()
    assert st["messages"] == 1 and st["first_seq"] == 2
    env.clock.advance(3)
    assert env.state()["messages"] == 0


def test_msg_ttl(env: Env) -> None:
    env.create(allow_msg_ttl=True)
    env.pub("s.a", Nats_TTL="2s")
    env.pub("s.a", Nats_TTL="never")
    env.pub("s.a")
    assert env.pub("s.a", Nats_TTL="bogus")["error"]["err_code"] == 10165
    env.clock.advance(2.1)
    st = env.state()
    assert st["messages"] == 2 and st["first_seq"] == 2


def test_ttl_disabled(env: Env) -> None:
    env.create()
    assert env.pub("s.a", Nats_TTL="2s")["error"]["err_code"] == 10166


class Listener:
    def __init__(self, name: str, wanted: set[int] | None = None) -> None:
        self.name = name
        self.stored: list[int] = []
        self.purged: list[int] = []
        self.wanted = wanted if wanted is not None else set()
        self.deleted = False

    def on_stored(self, msg: StoredMessage) -> None:
        self.stored.append(msg.seq)
        self.wanted.add(msg.seq)

    def on_purged(self, first_seq: int, removed: object = ()) -> None:
        self.purged.append(first_seq)

    def wants(self, seq: int, subject: str) -> bool:
        return seq in self.wanted

    def on_stream_deleted(self) -> None:
        self.deleted = True

    def stop(self) -> None:
        pass


def test_interest_retention_without_consumers_keeps_nothing(env: Env) -> None:
    env.create(retention="interest")
    assert env.pub("s.a")["seq"] == 1
    assert env.state()["messages"] == 0


def test_interest_and_workqueue_ack(env: Env) -> None:
    env.create(retention="interest")
    stream = env.engine.streams["S"]
    a, b = Listener("a"), Listener("b")
    stream.add_consumer("a", a)
    stream.add_consumer("b", b)
    env.pub("s.a")
    assert a.stored == [1] and env.state()["messages"] == 1
    a.wanted.discard(1)
    stream.acknowledged(1)
    assert env.state()["messages"] == 1
    b.wanted.discard(1)
    stream.acknowledged(1)
    assert env.state()["messages"] == 0

    env.create(name="W", subjects=["w"], retention="workqueue")
    wq = env.engine.streams["W"]
    wq.add_consumer("c", Listener("c"))
    env.pub("w")
    assert env.state("W")["messages"] == 1
    wq.acknowledged(1)
    assert env.state("W")["messages"] == 0


def test_purge_notifies_and_delete_tells_consumers(env: Env) -> None:
    env.create()
    stream = env.engine.streams["S"]
    listener = Listener("c")
    stream.add_consumer("c", listener)
    for _ in range(3):
        env.pub("s.a")
    assert env.api("STREAM.PURGE.S", {"keep": 1}) == {
        "type": "io.nats.jetstream.api.v1.stream_purge_response", "success": True, "purged": 2
    }
    assert listener.purged == [3]
    env.api("STREAM.DELETE.S")
    assert listener.deleted


def test_sync_always_group_commit_orders_acks_after_flush() -> None:
    env = Env(Settings(sync_always=True))
    env.create(storage="memory")
    box = env.router.inbox("acks")
    for i in range(3):
        env.router.publish("s.a", "acks", None, b"%d" % i)
    env.router.publish("s.a", "acks", encode_headers({"Nats-Expected-Stream": "X"}), b"")
    assert box.messages == []  # held until the group commit
    env.clock.advance(0)
    acks = [m.json() for m in box.messages]
    assert [a.get("seq") for a in acks] == [1, 2, 3, 0]
    assert acks[3]["error"]["err_code"] == 10060


def test_max_consumers(env: Env) -> None:
    env.create(max_consumers=1)
    stream = env.engine.streams["S"]
    stream.add_consumer("a", Listener("a"))
    with pytest.raises(Exception) as info:
        stream.add_consumer("b", Listener("b"))
    assert getattr(info.value, "err_code", None) == 10026


def test_domain_pub_ack_and_api() -> None:
    env = Env(Settings(domain="hub"))
    resp = env.router.request_json("$JS.hub.API.STREAM.CREATE.S", {"name": "S", "subjects": ["s"]})
    assert resp["config"]["name"] == "S"
    assert env.pub("s") == {"stream": "S", "seq": 1, "domain": "hub"}


def test_api_without_handler_is_silent(env: Env) -> None:
    assert env.router.request(API + "NOPE.NOTHING") == []


def test_file_streams_persist_meta(tmp_path: Path) -> None:
    env = Env(Settings(store_dir=str(tmp_path)))
    env.create(name="F", subjects=["f"])
    meta = tmp_path / "jetstream" / "$G" / "streams" / "F" / "meta.json"
    assert meta.exists()
    env.create(name="M", subjects=["m"], storage="memory")
    assert not (tmp_path / "jetstream" / "$G" / "streams" / "M").exists()
    env.api("STREAM.DELETE.F")
    assert not meta.parent.exists()


def test_no_ack_stream_sends_no_pub_ack(env: Env) -> None:
    env.create(no_ack=True)
    assert env.router.request("s.a", b"x") == []
    assert env.state()["messages"] == 1


def test_first_seq(env: Env) -> None:
    env.create(first_seq=100)
    assert env.pub("s.a") == {"stream": "S", "seq": 100}


def test_group_commit_sync_failure_fails_the_acks() -> None:
    """Fault injection: the fsync of a group commit fails; nobody gets a success ack."""
    env = Env(Settings(sync_always=True))
    env.create(storage="memory")
    stream = env.engine.streams["S"]

    def broken_sync() -> None:
        raise OSError(5, "I/O error")

    stream.store.sync = broken_sync  # type: ignore[method-assign]
    box = env.router.inbox("acks")
    env.router.publish("s.a", "acks", None, b"1")
    env.router.publish("s.a", "acks", None, b"2")
    env.clock.advance(0)
    acks = [m.json() for m in box.messages]
    assert [a["error"]["err_code"] for a in acks] == [10077, 10077]


def test_periodic_sync_keeps_running_after_a_failure() -> None:
    env = Env(Settings(sync_interval_s=10))
    env.create(storage="memory")
    stream = env.engine.streams["S"]
    calls: list[int] = []

    def flaky_sync() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")

    stream.store.sync = flaky_sync  # type: ignore[method-assign]
    env.clock.advance(10)
    env.clock.advance(10)
    assert len(calls) == 2
    assert env.pub("s.a")["seq"] == 1


def test_ttl_and_dedup_rebuilt_on_reopen(tmp_path: Path) -> None:
    clock = FakeClock()
    first = Env(Settings(store_dir=str(tmp_path)), clock)
    first.create(allow_msg_ttl=True)
    first.pub("s.a", Nats_TTL="5s", Nats_Msg_Id="a")
    first.pub("s.a", Nats_Msg_Id="b")
    first.engine.close()
    second = Env(Settings(store_dir=str(tmp_path)), clock)
    assert second.pub("s.b", Nats_Msg_Id="a") == {"stream": "S", "seq": 1, "duplicate": True}
    assert second.pub("s.b", Nats_Expected_Last_Msg_Id="b")["seq"] == 3
    clock.advance(6)
    st = second.state()
    assert st["messages"] == 2 and st["first_seq"] == 2
    second.engine.close()


def _stream_dir(root: Path, name: str = "S") -> Path:
    return root / "jetstream" / "$G" / "streams" / name


def test_clean_close_saves_dedup_table_and_reopen_uses_it_once(tmp_path: Path) -> None:
    clock = FakeClock()
    first = Env(Settings(store_dir=str(tmp_path)), clock)
    first.create()
    first.pub("s.a", Nats_Msg_Id="a")
    first.pub("s.a", Nats_Msg_Id="b")
    first.engine.close()
    snapshot = _stream_dir(tmp_path) / "dedup.json"
    assert snapshot.exists()
    # Prove the reopen takes the table from the snapshot, not from the messages:
    # a snapshot that knows an id no stored message carries.
    body = json.loads(snapshot.read_text())
    seqs, ts = _dedup_column(body["seqs"]), _dedup_column(body["ts"])
    assert body["ids"] == ["a", "b"] and list(seqs) == [1, 2]
    body["ids"].append("only-in-snapshot")
    body["seqs"] = _dedup_b64(seqs + array("q", [2]))
    body["ts"] = _dedup_b64(ts + array("q", [ts[-1]]))
    snapshot.write_text(json.dumps(body))
    second = Env(Settings(store_dir=str(tmp_path)), clock)
    assert not snapshot.exists()  # read once: a crash from here on rebuilds from messages
    assert second.pub("s.b", Nats_Msg_Id="only-in-snapshot")["duplicate"] is True
    assert second.pub("s.b", Nats_Msg_Id="a") == {"stream": "S", "seq": 1, "duplicate": True}
    assert second.pub("s.b", Nats_Expected_Last_Msg_Id="b")["seq"] == 3
    second.engine.close()


def _dedup_column(text: str) -> array:
    out = array("q")
    out.frombytes(base64.b64decode(text))
    if sys.byteorder != "little":
        out.byteswap()
    return out


def _dedup_b64(column: array) -> str:
    if sys.byteorder != "little":
        column = array("q", column)
        column.byteswap()
    return base64.b64encode(column.tobytes()).decode()


def test_dedup_table_in_the_older_triple_form_is_still_read(tmp_path: Path) -> None:
    clock = FakeClock()
    first = Env(Settings(store_dir=str(tmp_path)), clock)
    first.create()
    first.pub("s.a", Nats_Msg_Id="a")
    first.engine.close()
    snapshot = _stream_dir(tmp_path) / "dedup.json"
    body = json.loads(snapshot.read_text())
    ts = _dedup_column(body["ts"])[0]
    snapshot.write_text(json.dumps({
        "last_seq": body["last_seq"], "last_msg_id": "a",
        "ids": [["a", 1, ts], ["only-in-snapshot", 1, ts]],
    }))
    second = Env(Settings(store_dir=str(tmp_path)), clock)
    assert second.pub("s.b", Nats_Msg_Id="only-in-snapshot") == {"stream": "S", "seq": 1, "duplicate": True}
    second.engine.close()


def test_stale_or_damaged_dedup_table_is_ignored(tmp_path: Path) -> None:
    clock = FakeClock()
    first = Env(Settings(store_dir=str(tmp_path)), clock)
    first.create()
    first.pub("s.a", Nats_Msg_Id="a")
    first.engine.close()
    snapshot = _stream_dir(tmp_path) / "dedup.json"
    body = json.loads(snapshot.read_text())
    body["last_seq"] = 99  # does not match the store: rebuilt from the messages
    body["ids"] = []
    snapshot.write_text(json.dumps(body))
    second = Env(Settings(store_dir=str(tmp_path)), clock)
    assert second.pub("s.b", Nats_Msg_Id="a")["duplicate"] is True
    second.engine.close()
    snapshot.write_text("{not json")
    third = Env(Settings(store_dir=str(tmp_path)), clock)
    assert not snapshot.exists()
    assert third.pub("s.b", Nats_Msg_Id="a")["duplicate"] is True
    third.engine.close()


def test_ttl_never_is_exempt_from_max_age_and_finite_ttl_is_not(env: Env) -> None:
    env.create(allow_msg_ttl=True, max_age=1_000_000_000)
    env.pub("s.a", Nats_TTL="never")
    env.pub("s.b", Nats_TTL="3s")
    env.pub("s.c")
    env.clock.advance(1.5)
    assert env.info(subjects_filter=">")["state"]["subjects"] == {"s.a": 1}
    env.pub("s.d")
    env.clock.advance(1.5)
    assert env.info(subjects_filter=">")["state"]["subjects"] == {"s.a": 1}


def test_subject_delete_markers(env: Env) -> None:
    resp = env.create(max_age=1_000_000_000, subject_delete_marker_ttl=2_000_000_000)
    assert resp["config"]["allow_msg_ttl"] is True and resp["config"]["allow_rollup_hdrs"] is True
    assert resp["config"]["metadata"]["_nats.req.level"] == "1"
    stream = env.engine.streams["S"]
    listener = Listener("c")
    stream.add_consumer("c", listener)
    env.pub("s.a")
    env.pub("s.a")
    env.pub("s.b", Nats_TTL="1s")
    env.clock.advance(1.1)
    st = env.info(subjects_filter=">")["state"]
    assert st["subjects"] == {"s.a": 1, "s.b": 1} and st["first_seq"] == 4 and st["last_seq"] == 5
    assert listener.stored == [1, 2, 3, 4, 5]
    marker = env.api("STREAM.MSG.GET.S", {"seq": 4})["message"]
    import base64

    assert base64.b64decode(marker["hdrs"]) == (
        b"NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 2s\r\nNats-Rollup: sub\r\n\r\n"
    )
    env.clock.advance(2.1)  # the markers expire, leaving no markers of their own
    st = env.state()
    assert st["messages"] == 0 and st["last_seq"] == 5


def test_marker_ttl_validation(env: Env) -> None:
    resp = env.api("STREAM.CREATE.B", {"name": "B", "subject_delete_marker_ttl": 500_000_000})
    assert resp["error"]["description"] == "subject delete marker TTL must be at least 1 second"


def test_removals_counter_moves_on_every_stream_side_removal(env: Env) -> None:
    env.create(max_msgs=2, allow_rollup_hdrs=True)
    stream = env.engine.streams["S"]
    seen = stream.removals
    env.pub("s.a")
    env.pub("s.a")
    assert stream.removals == seen  # nothing removed yet
    env.pub("s.a")  # max_msgs drops the oldest
    assert stream.removals > seen
    env.create(name="R", subjects=["r.>"], allow_rollup_hdrs=True)
    other = env.engine.streams["R"]
    for subject in ("r.a", "r.b", "r.c"):
        env.pub(subject)
    seen = other.removals
    env.pub("r.d", Nats_Rollup="sub")  # nothing else on r.d: nothing removed
    assert other.removals == seen
    env.pub("r.e", Nats_Rollup="all")
    assert other.removals > seen
    seen = other.removals
    env.api("STREAM.MSG.DELETE.R", {"seq": 5})
    assert other.removals > seen


# -- data that must not be destroyed (issue 12) ----------------------------------------
def test_purge_seq_beyond_the_store_is_refused(tmp_path: Path) -> None:
    """A purge `seq` of 2**63 was accepted, overflowed the index, and every later
    publish failed after writing its record; after a restart the stream was gone."""
    env = Env(Settings(store_dir=str(tmp_path)))
    env.create(name="S", subjects=["s.>"])
    assert env.pub("s.1")["seq"] == 1
    for body in ({"seq": 1 << 63}, {"seq": (1 << 64) - 1}, {"keep": 1 << 63}):
        resp = env.api("STREAM.PURGE.S", body)
        assert resp["error"]["err_code"] == 10110, resp
        assert "above the largest" in resp["error"]["description"]
    assert env.api("STREAM.PURGE.S", {"seq": 2})["purged"] == 1
    assert env.pub("s.1")["seq"] == 2
    env.engine.close()
    again = Env(Settings(store_dir=str(tmp_path)))
    assert again.state()["last_seq"] == 2
    assert again.pub("s.1")["seq"] == 3


def test_publish_past_the_last_sequence_is_an_error_ack(tmp_path: Path) -> None:
    env = Env(Settings(store_dir=str(tmp_path)))
    env.create(name="S", subjects=["s.>"], first_seq=(1 << 63) - 1)
    assert env.pub("s.1")["seq"] == (1 << 63) - 1
    resp = env.pub("s.1")
    assert resp["error"]["err_code"] == 10077 and "largest storable" in resp["error"]["description"]
    env.engine.close()
    again = Env(Settings(store_dir=str(tmp_path)))
    assert again.state()["messages"] == 1


@pytest.mark.parametrize("damage", ["meta", "store"])
def test_create_never_deletes_a_stream_that_failed_to_load(tmp_path: Path, damage: str) -> None:
    env = Env(Settings(store_dir=str(tmp_path)))
    env.create(name="S", subjects=["s.>"])
    for _ in range(5):
        env.pub("s.1", b"precious")
    env.engine.close()
    directory = tmp_path / "jetstream" / "$G" / "streams" / "S"
    if damage == "meta":
        (directory / "meta.json").write_text('{"config": {"name": "S", "subj')
        problem = "meta.json unreadable"
    else:
        (directory / "msgs").rename(directory / "msgs-blocked")
        (directory / "msgs").write_text("not a directory")
        problem = "store did not open"
    before = sorted(p.name for p in directory.rglob("*"))
    again = Env(Settings(store_dir=str(tmp_path)))
    resp = again.api("STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
    assert resp["error"]["err_code"] == 10049, resp
    text = resp["error"]["description"]
    assert "stream S not created" in text and problem in text, text
    assert str(tmp_path) not in text
    assert sorted(p.name for p in directory.rglob("*")) == before
    assert again.api("STREAM.NAMES")["streams"] is None


@pytest.mark.asyncio
async def test_group_commit_fsyncs_on_the_disk_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With sync_always the loop hands the fsyncs to the disk thread and keeps
    serving; the held pub acks go out, in order, once the disk is done."""
    loop = asyncio.get_running_loop()
    clock = LoopClock(loop)
    router = RouterDouble()
    engine = JetStream(Settings(store_dir=str(tmp_path), sync_always=True), clock)
    engine.start(router)
    try:
        made = router.request(API + "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        await until(lambda: bool(made))  # answered once its files are fsynced (sync_always)
        resp = made[0].json()
        assert "error" not in resp, resp
        threads: list[str] = []
        real_fsync = os.fsync
        release = threading.Event()  # the disk thread's fsyncs wait for it (no clock)

        def slow_fsync(fd: int) -> None:
            threads.append(threading.current_thread().name)
            release.wait(30)
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", slow_fsync)
        box = router.inbox("_ACKS")
        for i in range(3):
            router.publish("s.1", "_ACKS", None, b"m%d" % i)
        for _ in range(200):  # the loop turns while the disk thread's fsync is blocked
            if threads:
                break
            await asyncio.sleep(0.01)
        assert threads and not release.is_set()
        assert box.messages == []  # nothing confirmed before the fsync finished
        release.set()
        for _ in range(200):
            if len(box.messages) == 3:
                break
            await asyncio.sleep(0.01)
        assert [json.loads(m.payload)["seq"] for m in box.messages] == [1, 2, 3]
        assert threads and all(name.startswith("jetstream-disk") for name in threads), threads
        monkeypatch.undo()
    finally:
        engine.close()
        clock.shutdown()


def test_the_overlap_check_of_a_create_costs_its_own_subjects_not_every_stream(env: Env) -> None:
    # every stream's subjects live in one index, kept as streams come and go:
    # creating stream N looks its subjects up there, it does not scan N streams
    filters = env.engine._stream_filters

    def visits_of_create(name: str) -> int:
        env.create(name=name, subjects=[f"{name}.>", f"x.{name}.*"], storage="memory")
        return filters._initial - filters.budget

    env.create(name="A0", subjects=["A0.>", "x.A0.*"], storage="memory")
    second = visits_of_create("A1")
    for i in range(2, 300):
        env.create(name=f"A{i}", subjects=[f"A{i}.>", f"x.A{i}.*"], storage="memory")
    assert visits_of_create("LAST") == second <= 4
    err = env.api("STREAM.CREATE.B", {"name": "B", "subjects": ["x.A7.q"], "storage": "memory"})["error"]
    assert err["err_code"] == 10065
    assert env.api("STREAM.DELETE.A7")["success"]
    env.create(name="B", subjects=["x.A7.q"], storage="memory")  # freed by the delete
    config = env.info("A8")["config"]
    assert "error" not in env.api("STREAM.UPDATE.A8", {**config, "subjects": ["A8.>", "x.A8.*", "y"]})
    refused = env.api("STREAM.UPDATE.A8", {**config, "subjects": ["A8.>", "A9.z"]})
    assert refused["error"]["err_code"] == 10065
    assert env.api("STREAM.CREATE.C", {"name": "C", "subjects": ["y"], "storage": "memory"})["error"]


def test_a_create_of_many_subjects_works_in_bounded_turns(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 24: STREAM.CREATE with 10,000 subjects held the loop; its checks and
    # subscriptions now go SUBJECTS_PER_TURN a loop turn, other API requests waiting
    monkeypatch.setattr(streams_api, "SUBJECTS_PER_TURN", 100)
    env.create(name="O", subjects=["o.>"], storage="memory")
    subjects = [f"m.{i}.>" for i in range(1000)]
    made, waiting = env.router.inbox("made"), env.router.inbox("waiting")
    body = json.dumps({"name": "M", "subjects": subjects, "storage": "memory"}).encode()
    env.router.publish(API + "STREAM.CREATE.M", "made", None, body)
    env.router.publish(API + "STREAM.INFO.O", "waiting", None, b"")
    subscribed: list[int] = []
    turns = 0
    while not made.messages:
        before = len(env.router._subs)
        assert env.clock.turn() == 1
        turns += 1
        subscribed.append(len(env.router._subs) - before)
    # validation, overlap check and subscriptions: ten steps of 100 subjects each
    assert turns >= 27 and max(subscribed) <= 101 and sum(subscribed) == 1000
    answer = made.json()
    assert answer["did_create"] and answer["config"]["subjects"] == subjects
    assert not waiting.messages
    env.clock.turn()
    assert waiting.json()["config"]["name"] == "O"
    assert env.pub("m.999.x")["seq"] == 1  # the last subject is served
    bad = subjects[:950] + ["o.x"] + subjects[950:]
    body = json.dumps({"name": "N", "subjects": [s.replace("m.", "n.") for s in bad]}).encode()
    env.router.publish(API + "STREAM.CREATE.N", "made", None, body)
    while env.clock.turn():
        pass
    assert made.json()["error"]["err_code"] == 10065 and "N" not in env.engine.streams


def test_an_update_to_many_subjects_works_in_bounded_turns(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streams_api, "SUBJECTS_PER_TURN", 100)
    env.create(name="U", subjects=["u.0"], storage="memory")
    config = {**env.info("U")["config"], "subjects": [f"u.{i}" for i in range(1000)]}
    updated = env.router.inbox("updated")
    env.router.publish(API + "STREAM.UPDATE.U", "updated", None, json.dumps(config).encode())
    subscribed = []
    while not updated.messages:
        before = len(env.router._subs)
        assert env.clock.turn() == 1
        subscribed.append(len(env.router._subs) - before)
    assert max(subscribed) <= 101 and len(subscribed) >= 20
    assert updated.json()["config"]["subjects"] == config["subjects"]
    assert env.pub("u.999")["seq"] == 1
