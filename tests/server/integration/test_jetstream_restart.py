"""Durability across a crash: SIGKILL the server, restart it, nothing acknowledged is lost.

Both servers for the kill/restart contract; the truncated-block test is about
our own file layout (bundled only).
"""

from __future__ import annotations

import base64
from pathlib import Path

import nats
import pytest
from js_helpers import api, create, info, pub

from jetstream_testing.process import ServerProcess, start_server

pytestmark = pytest.mark.asyncio

N = 60


async def publish_all(url: str) -> list[tuple[int, str, dict[str, str], bytes]]:
    nc = await nats.connect(url)
    try:
        await create(nc, name="F", subjects=["f.>"])
        await create(nc, name="M", subjects=["m"], storage="memory")
        sent = []
        for i in range(N):
            subject = f"f.{i % 4}"
            headers = {"Nats-Msg-Id": f"id-{i}", "X-Index": str(i)}
            payload = b"payload-%d" % i * (1 + i % 5)
            ack = await pub(nc, subject, payload, headers)
            sent.append((ack["seq"], subject, headers, payload))
        await pub(nc, "m", b"gone after restart")
        return sent
    finally:
        await nc.close()


async def check_all(url: str, sent: list[tuple[int, str, dict[str, str], bytes]]) -> None:
    nc = await nats.connect(url)
    try:
        st = (await info(nc, "F"))["state"]
        assert st["messages"] == N and st["last_seq"] == N
        for seq, subject, headers, payload in sent:
            msg = (await api(nc, "STREAM.MSG.GET.F", {"seq": seq}))["message"]
            assert msg["subject"] == subject
            assert base64.b64decode(msg["data"]) == payload
            raw = base64.b64decode(msg["hdrs"]).decode()
            for key, value in headers.items():
                assert f"{key}: {value}\r\n" in raw
        # dedup state survived: the same id is a duplicate with the original sequence
        dup = await pub(nc, "f.0", b"again", {"Nats-Msg-Id": "id-7"})
        assert dup == {"stream": "F", "seq": 8, "duplicate": True}
        assert (await pub(nc, "f.0", b"new"))["seq"] == N + 1
        # memory streams are not persisted
        resp = await info(nc, "M")
        assert resp["error"]["err_code"] == 10059
    finally:
        await nc.close()


async def test_kill_and_restart_keeps_acknowledged(server: ServerProcess) -> None:
    sent = await publish_all(server.url)
    server.kill()
    server.restart()
    await check_all(server.url, sent)


async def test_clean_restart_keeps_everything(server: ServerProcess) -> None:
    sent = await publish_all(server.url)
    server.restart()
    await check_all(server.url, sent)


async def test_truncated_last_block_recovers_intact_records(store_dir: Path) -> None:
    srv = start_server("bundled", store_dir)
    try:
        sent = await publish_all(srv.url)
        srv.kill()
        blocks = sorted((store_dir / "jetstream" / "$G" / "streams" / "F").rglob("*.blk"))
        assert blocks, "no block files where the layout says they are"
        last = blocks[-1]
        size = last.stat().st_size
        with open(last, "r+b") as fh:
            fh.truncate(size - 5)  # cut into the last record
        srv.restart()
        nc = await nats.connect(srv.url)
        try:
            st = (await info(nc, "F"))["state"]
            assert st["messages"] == N - 1 and st["last_seq"] == N - 1
            for seq, subject, _, payload in sent[:-1]:
                msg = (await api(nc, "STREAM.MSG.GET.F", {"seq": seq}))["message"]
                assert msg["subject"] == subject and base64.b64decode(msg["data"]) == payload
            assert (await pub(nc, "f.x", b"after"))["seq"] == N
        finally:
            await nc.close()
        line = srv.wait_for_log(r"stream F recovered .* dropped 1 messages", timeout=5)
        assert "dropped 1 messages" in line
    finally:
        srv.stop()


async def test_garbage_stream_dir_is_skipped(store_dir: Path) -> None:
    bad = store_dir / "jetstream" / "$G" / "streams" / "BROKEN"
    bad.mkdir(parents=True)
    (bad / "meta.json").write_text("{not json")
    srv = start_server("bundled", store_dir)
    try:
        nc = await nats.connect(srv.url)
        try:
            await create(nc, name="OK", subjects=["ok"])
            assert (await api(nc, "STREAM.NAMES"))["streams"] == ["OK"]
        finally:
            await nc.close()
        srv.wait_for_log(r"skipping stream directory .*BROKEN", timeout=5)
    finally:
        srv.stop()


async def test_sync_always_group_commit_survives_kill(server_kind: str, tmp_path: Path) -> None:
    """`sync_interval: always` (nats-server's spelling): a burst of async publishes
    is acknowledged in order, and every acknowledged message survives SIGKILL."""
    conf = tmp_path / "js.conf"
    conf.write_text(
        'jetstream {\n  store_dir: "%s"\n  sync_interval: always\n}\n' % (tmp_path / "store")
    )
    srv = start_server(server_kind, None, args=["-c", str(conf)])
    try:
        nc = await nats.connect(srv.url)
        try:
            js = nc.jetstream()
            await js.add_stream(name="G", subjects=["g"])
            futures = [await js.publish_async("g", b"m%d" % i) for i in range(300)]
            acks = [await f for f in futures]
            assert [a.seq for a in acks] == list(range(1, 301))
        finally:
            await nc.close()
        srv.kill()
        srv.restart()
        nc = await nats.connect(srv.url)
        try:
            st = (await info(nc, "G"))["state"]
            assert st["messages"] == 300 and st["last_seq"] == 300
            msg = (await api(nc, "STREAM.MSG.GET.G", {"seq": 300}))["message"]
            assert base64.b64decode(msg["data"]) == b"m299"
        finally:
            await nc.close()
    finally:
        srv.stop()
