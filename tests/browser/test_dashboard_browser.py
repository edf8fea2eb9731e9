"""The dashboard in a real browser: headless Chromium loads the page while a publisher
writes to a stream and a Spark streaming query reads it through a durable.

Twice, the same scenario: the bundled server's own page (monitoring port, `/dashboard/`),
and the page of `jetstream dashboard` (the CLI) in front of the real nats-server. The
test reads the rendered DOM (the rows carry `data-*` attributes with raw values): the
stream's message count rises while the publisher runs; the query's durable shows up
with its query identity, behind the stream at first (a backlog read 50 messages a
batch, a publisher at 10 messages a second), then its lag falls to 0 once the publisher stopped. A screenshot of each page
is saved in the test's temporary directory. Every wait is on a DOM condition, bounded
(headless_chromium.Chromium.wait_for); the page refreshes every second (`?refresh=1`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dashboard_helpers import LivePublisher, dashboard_command, stream_with_backlog
from headless_chromium import Chromium
from read_helpers import stream_reader

from jetstream_testing.process import start_server, write_config

pytestmark = pytest.mark.browser

STREAM, DURABLE = "ORDERS", "dashq"
STREAM_ROW = f'data-stream="{STREAM}"'
AUTH_CONFIG = 'jetstream: enabled\nauthorization { users: [{user: alice, password: s3cret}] }\n'
BACKLOG = 150
WAIT_S = 90.0


def _cell(row: str, field: str) -> str:
    """JavaScript: the raw value of a cell (`data-value`) as a number, or NaN."""
    return (f"Number((document.querySelector('tr[{row}] [data-field=\"{field}\"]') || "
            f"{{dataset: {{}}}}).dataset.value)")


def run_scenario(browser: Chromium, page_url: str, server_url: str, spark: Any,
                 tmp_path: Path, name: str) -> None:
    stream_with_backlog(server_url, STREAM, ["orders.>"], "orders.backlog", BACKLOG)
    stream_row = STREAM_ROW
    query_row = f'data-query="{STREAM}/{DURABLE}"'
    publisher = LivePublisher(server_url, "orders.live", interval_s=0.1)
    publisher.start()
    query = None
    try:
        browser.open(page_url + "?refresh=1")
        seen = browser.wait_for(f"{_cell(stream_row, 'messages')} >= {BACKLOG} && "
                                f"{_cell(stream_row, 'messages')}", WAIT_S, "the stream's row")
        browser.wait_for(f"{_cell(stream_row, 'messages')} > {seen}", WAIT_S,
                         "the message count to rise")

        df = stream_reader(spark, server_url, STREAM, durable=DURABLE, startingOffsets="earliest",
                           maxMessagesPerTrigger=50)
        query = (df.writeStream.format("noop").queryName(f"dashboard_{name}")
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(processingTime="1 second").start())
        behind = browser.wait_for(f"{_cell(query_row, 'lag')} > 0 && {_cell(query_row, 'lag')}",
                                  WAIT_S, "the query's durable, behind the stream")
        assert behind > 0
        owner = browser.evaluate(
            f"document.querySelector('tr[{query_row}] [data-field=\"owner\"]').dataset.value")
        assert owner, "the query identity from the durable's metadata"
        sent = publisher.stop()
        assert sent > 0
        browser.wait_for(f"{_cell(query_row, 'lag')} === 0 && "
                         f"{_cell(query_row, 'committed')} === {_cell(stream_row, 'last_seq')}",
                         WAIT_S, "the query's lag to fall to 0")
        status = browser.evaluate(
            f"document.querySelector('tr[{query_row}] [data-field=\"status\"]').textContent")
        assert status == "caught up"
        assert browser.evaluate("document.body.dataset.state") == "ok"
        shot = browser.screenshot(tmp_path / f"dashboard-{name}.png")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    finally:
        if publisher.is_alive():
            publisher.stop()
        if query is not None:
            query.stop()


def test_bundled_servers_page(browser: Chromium, spark: Any, tmp_path: Path) -> None:
    server = start_server("bundled", tmp_path / "store", http_port=-1)
    try:
        page = f"http://127.0.0.1:{server.monitor_port}/dashboard/"
        run_scenario(browser, page, server.url, spark, tmp_path, "bundled")
        # the event loop's lag is the bundled server's own figure
        assert browser.evaluate(
            "document.querySelector('[data-field=\"loop_lag_ms\"]') !== null") is True
        server.stop()  # the page says so, and keeps the last data
        banner = browser.wait_for("document.body.dataset.state === 'error' && "
                                  "document.getElementById('banner').textContent", WAIT_S,
                                  "the page to say the server does not answer")
        assert "does not answer" in banner
        assert browser.evaluate(f"{_cell(STREAM_ROW, 'messages')} > 0")
    finally:
        server.stop()


def test_sign_in_on_a_server_with_authentication(browser: Chromium, tmp_path: Path) -> None:
    config = write_config(tmp_path / "server.conf", AUTH_CONFIG)
    server = start_server("bundled", tmp_path / "store", config=config, http_port=-1)
    try:
        browser.open(f"http://127.0.0.1:{server.monitor_port}/dashboard/")
        reason = browser.wait_for("document.body.dataset.state === 'login' && "
                                  "document.getElementById('login-reason').textContent",
                                  WAIT_S, "the sign-in form")
        assert "requires credentials" in reason
        browser.evaluate("document.getElementById('login-user').value = 'alice';"
                         "document.getElementById('login-password').value = 'wrong';"
                         "document.getElementById('login').requestSubmit(); true")
        refused = browser.wait_for("document.getElementById('login-reason').textContent"
                                   ".includes('refused') && document.getElementById("
                                   "'login-reason').textContent", WAIT_S, "the refusal")
        assert "refused" in refused
        browser.evaluate("document.getElementById('login-user').value = 'alice';"
                         "document.getElementById('login-password').value = 's3cret';"
                         "document.getElementById('login').requestSubmit(); true")
        who = browser.wait_for("document.body.dataset.state === 'ok' && "
                               "document.getElementById('identity').textContent", WAIT_S,
                               "the page of the signed-in user")
        assert who == "user alice · account $G"
    finally:
        server.stop()


def test_cli_page_for_nats_server(browser: Chromium, spark: Any, tmp_path: Path) -> None:
    server = start_server("nats-server", tmp_path / "store")
    try:
        with dashboard_command("--server", server.url, "--port", "0") as page:
            run_scenario(browser, page, server.url, spark, tmp_path, "nats-server")
    finally:
        server.stop()

