"""Helpers of the dashboard tests: a live publisher, `jetstream dashboard` as a child
process, data.json over HTTP, and a check of data.json's shape (docs/dashboard.md,
"The data"), the same for the bundled server's page and the CLI's."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import nats

PAGE_LINE = "Dashboard for "


class LivePublisher(threading.Thread):
    """Publishes to `subject` (JetStream acks awaited) every `interval_s` until stopped."""

    def __init__(self, url: str, subject: str, interval_s: float = 0.02) -> None:
        super().__init__(name="live-publisher", daemon=True)
        self.url, self.subject, self.interval_s = url, subject, interval_s
        self.sent = 0
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported by stop()
            self.error = exc

    async def _main(self) -> None:
        nc = await nats.connect(self.url)
        js = nc.jetstream()
        try:
            while not self._halt.is_set():
                await js.publish(self.subject, b'{"live": true}')
                self.sent += 1
                await asyncio.sleep(self.interval_s)
        finally:
            await nc.close()

    def stop(self) -> int:
        self._halt.set()
        self.join(30)
        assert self.error is None, self.error
        return self.sent


def stream_with_backlog(url: str, stream: str, subjects: list[str], subject: str, n: int) -> None:
    """Create `stream` and publish `n` messages to `subject` (acks awaited)."""

    async def main() -> None:
        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            await js.add_stream(name=stream, subjects=subjects)
            acks = [js.publish(subject, b'{"backlog": true}') for _ in range(n)]
            await asyncio.gather(*acks)
        finally:
            await nc.close()

    asyncio.run(main())


@contextmanager
def dashboard_command(*args: str, timeout: float = 60) -> Iterator[str]:
    """`jetstream dashboard ARGS` as a child process; yields the page's URL (logged on
    stderr), stops it at the end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    proc = subprocess.Popen([sys.executable, "-m", "jetstream_cli", "dashboard", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    found = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip())
            if PAGE_LINE in line:
                found.set()
        found.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        assert found.wait(timeout), f"no dashboard URL within {timeout}s: {lines}"
        line = next((x for x in lines if PAGE_LINE in x), None)
        assert line is not None, f"jetstream dashboard ended: {proc.poll()} {lines}"
        yield line.split(" at ", 1)[1].split()[0]
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """GET `url`: (status, headers, body), for any status."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def data(page_url: str, query: str = "", headers: dict[str, str] | None = None) -> Any:
    status, _, body = get(page_url + "data.json" + (f"?{query}" if query else ""), headers)
    assert status == 200, (status, body[:300])
    answer = json.loads(body)
    check_shape(answer)
    return answer


def check_shape(answer: dict[str, Any]) -> None:
    """data.json's shape, version 1 (docs/dashboard.md): what the page reads."""
    assert answer["dashboard"] == 1
    assert answer["source"] in ("jetstream-server", "jetstream-cli")
    assert isinstance(answer["now_ms"], int) and isinstance(answer["refresh_ms"], int)
    for key in ("identity", "server", "account", "detail"):
        assert key in answer, key
    assert all(isinstance(n, str) for n in answer["notes"] + answer["errors"])
    assert set(answer["cost"]) == {"api_requests", "took_ms"}
    streams = answer["streams"]
    assert {"total", "offset", "limit", "hidden", "items"} <= set(streams)
    assert len(streams["items"]) <= streams["limit"]
    for info in streams["items"]:
        assert {"config", "state", "consumers"} <= set(info), sorted(info)
        for key in ("messages", "bytes", "first_seq", "last_seq", "consumer_count"):
            assert isinstance(info["state"][key], int), key
        consumers = info["consumers"]
        assert {"total", "offset", "limit", "items"} <= set(consumers)
        for consumer in consumers["items"]:
            for key in ("name", "config", "delivered", "ack_floor", "num_pending",
                        "num_ack_pending", "num_redelivered"):
                assert key in consumer, key
    server = answer["server"]
    if server is not None and server.get("scope"):
        for key in ("connections", "subscriptions", "in_msgs", "out_msgs", "in_bytes", "out_bytes"):
            assert isinstance(server[key], int), key
