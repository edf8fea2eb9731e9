"""The commands of the NATS documentation's JetStream walkthrough, as written, with
`jetstream` in place of `nats`, against both servers."""

from __future__ import annotations

import re

from cli_helpers import jetstream

from jetstream_testing.process import ServerProcess


def test_walkthrough(server: ServerProcess) -> None:
    added = jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--storage",
                      "file", "--retention", "limits", "--max-age", "24h", "--defaults")
    assert added.stdout.startswith("Stream ORDERS was created\n\nInformation for Stream ORDERS")
    for row in ("Subjects: orders.>", "Storage: File", "Retention: Limits",
                "Maximum Age: 1d0h0m0s", "Duplicate Window: 2m0s", "Messages: 0"):
        assert row in added.stdout

    published = jetstream(server, "pub", "orders.new", "Order #1001")
    assert re.fullmatch(r'\d\d:\d\d:\d\d Published 11 bytes to "orders.new"\n', published.stderr)

    consumer = jetstream(server, "consumer", "add", "ORDERS", "order-processor", "--pull",
                         "--deliver", "all", "--ack", "explicit", "--defaults")
    assert "Information for Consumer ORDERS > order-processor" in consumer.stdout
    for row in ("Pull Mode: true", "Deliver Policy: All", "Ack Policy: Explicit",
                "Unprocessed Messages: 1"):
        assert row in consumer.stdout

    pulled = jetstream(server, "consumer", "next", "ORDERS", "order-processor", "--count", "3",
                       "--ack")
    assert re.match(r"\[\d\d:\d\d:\d\d\] subj: orders.new / tries: 1 / cons seq: 1 / "
                    r"str seq: 1 / pending: 0\n\nOrder #1001\n\nAcknowledged message\n",
                    pulled.stdout), pulled.stdout
    assert "No more messages available" in pulled.stderr

    listed = jetstream(server, "stream", "ls").stdout.splitlines()
    assert listed[1].strip("│ ") == "Streams"
    assert [c.strip() for c in listed[3].split("│")[1:-1]] == [
        "Name", "Description", "Created", "Messages", "Size", "Last Message"]
    row = [c.strip() for c in listed[5].split("│")[1:-1]]
    assert row[0] == "ORDERS" and row[3] == "1"

    report = jetstream(server, "consumer", "report", "ORDERS").stdout.splitlines()
    assert report[1].strip("│ ") == "Consumer report for ORDERS with 1 consumers"
    assert [c.strip() for c in report[3].split("│")[1:-1]] == [
        "Consumer", "Mode", "Ack Policy", "Ack Wait", "Ack Pending", "Redelivered",
        "Unprocessed", "Ack Floor", "API Level", "Cluster"]
    row = [c.strip() for c in report[5].split("│")[1:-1]]
    assert row[:8] == ["order-processor", "Pull", "Explicit", "30.00s", "0", "0", "0", "1"]
