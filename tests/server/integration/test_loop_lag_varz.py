"""The bundled server's loop watchdog end to end: a request that holds the loop past
`loop_lag_warning` is logged with the client and the op it came in, and `/varz`'s
`event_loop` block shows the lag. (Bundled server only: nats-server has no such field.)"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import nats
import pytest

from jetstream_testing.process import start_server, write_config

pytestmark = pytest.mark.asyncio


def varz(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/varz", timeout=5) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


async def test_slow_request_is_logged_and_lag_shows_in_varz(tmp_path: Path) -> None:
    config = write_config(tmp_path / "server.conf", "loop_lag_warning: 1ms\n")
    proc = start_server("bundled", tmp_path / "store", config=config, http_port=-1)
    try:
        before = varz(proc.monitor_port)["event_loop"]
        assert before["warning_threshold_ms"] == 1
        nc = await nats.connect(proc.url, connect_timeout=5, max_reconnect_attempts=0)
        try:
            # a create of 40,000 subjects runs in steps of 2,048 subjects (never the
            # whole request in one loop turn), the first in the client's turn: each
            # step validates and checks its subjects, well over 1 ms of loop time
            subjects = [f"*.b{i}" for i in range(20000)] + [f"k{i}.a" for i in range(20000)]
            msg = await nc.request(
                "$JS.API.STREAM.CREATE.HOG", json.dumps({"name": "HOG", "subjects": subjects}).encode(), timeout=30
            )
            assert json.loads(msg.data)["error"]["description"] == "too many subjects to check for overlaps"
        finally:
            await nc.close()
        proc.wait_for_log(r"event loop blocked for \d+ ms by client \d+ .*\$JS\.API\.STREAM\.CREATE\.HOG", timeout=5)
        after = varz(proc.monitor_port)["event_loop"]
        assert after["slow_steps"] >= 1 and after["max_lag_ms"] >= 1 and after["slowest_step"]
    finally:
        proc.stop()
