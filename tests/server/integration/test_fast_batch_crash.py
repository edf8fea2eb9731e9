"""A flow ack of a fast batch is a promise: kill -9 while the batch is in flight.

With every write synced before its ack (`sync_interval: always`), a flow ack
``{"type":"ack","seq":S}`` says messages 1..S are on disk. The publisher sends
in random bursts, the server is killed with a burst still in flight, and after
the restart every message up to the last flow ack heard is there, in order.
Both servers; seeds printed (`JS_CRASH_SEED` replays one).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from js_helpers import api
from server_kinds import SERVER_KINDS

from jetstream_testing.process import ServerProcess, start_server, write_config

pytestmark = pytest.mark.crash

SEEDS = [int(os.environ["JS_CRASH_SEED"])] if os.environ.get("JS_CRASH_SEED") else [
    random.randrange(1 << 30) for _ in range(2)
]


@pytest.fixture(params=SERVER_KINDS)
def synced_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerProcess]:
    config = write_config(tmp_path / "sync.conf", "jetstream { sync_interval: always }\n")
    proc = start_server(str(request.param), tmp_path / "store", config=config)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.mark.parametrize("seed", SEEDS)
async def test_flow_acked_messages_survive_a_kill(synced_server: ServerProcess, seed: int) -> None:
    print(f"seed {seed}")
    rng = random.Random(seed)
    nc = await nats.connect(synced_server.url, allow_reconnect=False)
    acked = 0
    try:
        resp = await api(nc, "STREAM.CREATE.K", {"name": "K", "subjects": ["k"],
                                                 "allow_batched": True})
        assert "error" not in resp, resp
        inbox = nc.new_inbox()
        flow = rng.randint(2, 8)
        promised = asyncio.Event()

        async def on_answer(msg: nats.aio.msg.Msg) -> None:
            nonlocal acked
            answer = json.loads(msg.data)
            assert answer.get("type") == "ack", answer
            acked = max(acked, int(answer["seq"]))
            if acked:
                promised.set()

        await nc.subscribe(inbox + ".>", cb=on_answer)
        seq = 0
        kill_after = rng.randint(5, 25)
        for burst in range(kill_after + 1):
            for _ in range(rng.randint(1, 40)):
                seq += 1
                op = 0 if seq == 1 else 1
                await nc.publish("k", b"%d" % seq, reply=f"{inbox}.b.{flow}.fail.{seq}.{op}.$FI")
            if burst == kill_after - 1:
                await asyncio.wait_for(promised.wait(), timeout=10)  # something was promised
            if burst < kill_after:
                await nc.flush()
                # let some flow acks arrive before the next burst
                await asyncio.sleep(rng.random() * 0.01)
        await nc.flush()  # the last burst is in the server's hands, not yet acked
    finally:
        # the client leaves first (nats-py left reconnecting to a killed server can
        # stall the next connect of the same loop), then the server dies mid-work
        await nc.close()
    synced_server.kill()
    heard = acked
    print(f"sent {seq}, flow-acked up to {heard} (flow {flow})")
    assert heard > 0
    synced_server.start()
    nc = await asyncio.wait_for(nats.connect(synced_server.url, allow_reconnect=False), 10)
    try:
        state = (await api(nc, "STREAM.INFO.K"))["state"]
        assert state["messages"] >= heard and state["first_seq"] == 1, state
        for check in sorted({1, heard, rng.randint(1, heard)}):
            got = (await api(nc, "STREAM.MSG.GET.K", {"seq": check}))["message"]
            assert base64.b64decode(got["data"]) == b"%d" % check
    finally:
        await nc.close()
