"""The read path's range fetch (read/fetch.py) over the lean client on both servers: exact
filtered ranges with headers, large ranges in chunks, the work-queue fallback by message
get, requests bounded by bytes, and a range read that resumes after a server restart."""

from __future__ import annotations

import json

import pytest
from lean_helpers import lean_connection, lean_options
from read_helpers import fill
from sink_helpers import create_stream, publish_acked

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import (
    LeanConnection,
)
from spark_jetstream.client.frames import parse_headers
from spark_jetstream.read.fetch import FetchSpec, fetch_range, fetch_range_by_get


async def test_fetch_range_exact_filtered_with_headers(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(
        js,
        "S",
        [(f"s.{'a' if i % 2 else 'b'}", f"{i}".encode(), {"H": str(i)} if i == 3 else None) for i in range(1, 21)],
        subjects=["s.>"],
    )
    with lean_connection(server) as conn:
        chunks = list(fetch_range(conn, FetchSpec("S", 2, 11, ("s.a",), chunk_rows=2)))
        assert [len(c) for c in chunks] == [2, 2, 1]
        seqs = [s for c in chunks for s in c.seqs]
        assert seqs == [3, 5, 7, 9, 11]
        assert [d for c in chunks for d in c.data] == [b"3", b"5", b"7", b"9", b"11"]
        hdrs = [h for c in chunks for h in (c.headers or [])]
        assert parse_headers(hdrs[0])[2] == [("H", "3")] and hdrs[1:] == [b""] * 4
        ts = [t for c in chunks for t in c.ts_ns]
        assert ts == sorted(ts) and ts[0] > 1_600_000_000 * 10**9
        # the same spec twice reads the same rows (a retried task)
        again = [s for c in fetch_range(conn, FetchSpec("S", 2, 11, ("s.a",))) for s in c.seqs]
        assert again == seqs
        # several filters, no headers kept, range past the end of the stream
        multi = list(fetch_range(conn, FetchSpec("S", 15, 100, ("s.a", "s.b"), with_headers=False)))
        assert [s for c in multi for s in c.seqs] == [16, 17, 18, 19, 20]
        assert all(c.headers is None for c in multi)
        assert list(fetch_range(conn, FetchSpec("S", 20, 30))) == []
        assert list(fetch_range(conn, FetchSpec("S", 5, 5))) == []
        # ephemeral read consumers are deleted afterwards
        assert conn.js_api("CONSUMER.NAMES.S").get("consumers") in ([], None)


async def test_fetch_large_range_in_chunks(server: ServerProcess, nc, js) -> None:  # type: ignore[no-untyped-def]
    await js.add_stream(name="BIG", subjects=["big"])
    payload = b"z" * 100
    for _ in range(20_000):
        await nc.publish("big", payload)
    await nc.flush()
    info = await js.stream_info("BIG")
    total = info.state.last_seq
    with lean_connection(server) as conn:
        spec = FetchSpec("BIG", 0, total, avg_msg_bytes=100)
        seqs = [s for c in fetch_range(conn, spec) for s in c.seqs]
        assert seqs == list(range(1, total + 1))
        # an average that overstates the size: ~80 messages per request, each request
        # ended by its count (nats-server then also sends "409 Batch Completed")
        small = FetchSpec("BIG", 0, total, avg_msg_bytes=100_000)
        assert small.request_batch < 100
        seqs = [s for c in fetch_range(conn, small) for s in c.seqs]
        assert seqs == list(range(1, total + 1))


async def test_work_queue_fallback_reads_by_get(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "WQ", [("wq.a", b"1"), ("wq.b", b"2"), ("wq.a", b"3", {"K": "v"})], subjects=["wq.>"], retention="workqueue")
    await js.add_consumer("WQ", durable_name="owner", ack_policy="explicit", filter_subject="wq.a")
    with lean_connection(server) as conn:
        chunks = list(fetch_range(conn, FetchSpec("WQ", 0, 3, ("wq.a",))))
        assert [s for c in chunks for s in c.seqs] == [1, 3]
        assert parse_headers(chunks[0].headers[1])[2] == [("K", "v")]  # type: ignore[index]
        multi = list(fetch_range_by_get(conn, FetchSpec("WQ", 0, 3, ("wq.b", "wq.a"))))
        assert [s for c in multi for s in c.seqs] == [1, 2, 3]
        assert [d for c in multi for d in c.data] == [b"1", b"2", b"3"]


async def test_requests_bounded_by_bytes_when_the_average_misleads(
    server: ServerProcess, js, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    import spark_jetstream.read.fetch as lean

    await fill(js, "MB", [("mb.x", bytes([65 + i % 26]) * 3000) for i in range(60)], subjects=["mb.>"])
    # each pull request may carry ~10 kB although the batch count (from a wrong
    # average of 10 bytes) would allow thousands of messages
    monkeypatch.setattr(lean, "REQUEST_BYTES", 10_000)
    with lean_connection(server) as conn:
        chunks = list(fetch_range(conn, FetchSpec("MB", 0, 60, avg_msg_bytes=10)))
    assert [s for c in chunks for s in c.seqs] == list(range(1, 61))
    assert all(len(d) == 3000 for c in chunks for d in c.data)
    # a message larger than the byte bound: the bound grows until it fits
    monkeypatch.setattr(lean, "REQUEST_BYTES", 1000)
    with lean_connection(server) as conn:
        chunks = list(fetch_range(conn, FetchSpec("MB", 10, 14, avg_msg_bytes=10)))
    assert [s for c in chunks for s in c.seqs] == [11, 12, 13, 14]


def test_a_range_read_resumes_after_a_restart_without_repeating_or_skipping(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    import spark_jetstream.read.fetch as lean

    create_stream(server.url, "R", ["r.>"])
    total = 3000
    publish_acked(server.url, [(f"r.{i % 3}", b"x" * 100) for i in range(total)])
    monkeypatch.setattr(lean, "REQUEST_BYTES", 32_000)  # small pulls: most of the range is still on the server
    seqs: list[int] = []
    with LeanConnection.open(lean_options(server.url, retryTimeout="30s", retryBackoffMax="500ms")) as conn:
        for chunk in fetch_range(conn, FetchSpec("R", 0, total, chunk_rows=200, avg_msg_bytes=100)):
            if not seqs:
                server.kill()  # mid-read: the rest comes after the restart, from a new consumer
                server.restart()
            seqs.extend(chunk.seqs)
        assert conn.connects == 2
    assert seqs == list(range(1, total + 1))


def test_pull_requests_never_ask_past_the_range(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pull requests ask only for what is left of the range (the second of two partitions is
    not read by the first's consumer; when the next request goes out early is
    tests/connector/unit/test_pull_requests.py), and the rows are exact; with interior deletions the range holds fewer
    messages than it spans, so a late request asks for more than there is (nats-server and the
    bundled server may refuse it with "408 Requests Pending") and the read still ends exactly."""
    import spark_jetstream.read.fetch as lean

    create_stream(server.url, "P", ["p.>"])
    total = 3000
    publish_acked(server.url, [(f"p.{i % 3}", b"x" * 100) for i in range(total)])
    monkeypatch.setattr(lean, "REQUEST_BYTES", 32_000)  # ~145 messages a request
    with LeanConnection.open(lean_options(server.url)) as conn:
        asked: list[int] = []
        publish = conn.publish

        def recording(subject: str, body: bytes, reply: str = "", headers: bytes = b"") -> None:
            if ".CONSUMER.MSG.NEXT." in subject:
                asked.append(int(json.loads(body)["batch"]))
            publish(subject, body, reply, headers)

        monkeypatch.setattr(conn, "publish", recording)
        spec = FetchSpec("P", 1000, 2000, chunk_rows=128, avg_msg_bytes=100)
        assert [s for c in fetch_range(conn, spec) for s in c.seqs] == list(range(1001, 2001))
        assert sum(asked) == 1000 and len(asked) > 5  # every request whole, none past the end
        monkeypatch.setattr(conn, "publish", publish)
        for seq in range(1500, 1900):  # the range now holds 600 of its 1,000 sequences
            conn.js_api("STREAM.MSG.DELETE.P", {"seq": seq, "no_erase": True})
        for start, end in ((1000, 2000), (0, total)):
            spec = FetchSpec("P", start, end, chunk_rows=128, avg_msg_bytes=100)
            got = [s for c in fetch_range(conn, spec) for s in c.seqs]
            assert got == [s for s in range(start + 1, end + 1) if not 1500 <= s < 1900]
        assert conn.js_api("CONSUMER.NAMES.P").get("consumers") in ([], None)
