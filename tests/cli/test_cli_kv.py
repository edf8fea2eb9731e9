"""`jetstream kv ...` against both servers."""

from __future__ import annotations

import re

from cli_helpers import jetstream, jetstream_json, one_line_error, start_cli

from jetstream_testing.process import ServerProcess


def test_add_put_get_del(server: ServerProcess) -> None:
    added = jetstream(server, "kv", "add", "CFG", "--history", "5", "--description", "config")
    assert added.stdout.startswith("Information for Key-Value Store Bucket CFG created ")
    rows = [line.strip() for line in added.stdout.splitlines()]
    for row in ("Bucket Name: CFG", "History Kept: 5", "Values Stored: 0",
                "JetStream Stream: KV_CFG", "Description: config"):
        assert row in rows
    assert jetstream(server, "kv", "put", "CFG", "a", "1").stdout == "1\n"
    jetstream(server, "kv", "put", "CFG", "a", input="two")
    got = jetstream(server, "kv", "get", "CFG", "a").stdout
    assert re.fullmatch(r"CFG > a revision: 2 created @ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n\ntwo\n\n",
                        got)
    assert jetstream(server, "kv", "get", "CFG", "a", "--raw").stdout == "two"
    assert jetstream(server, "kv", "get", "CFG", "a", "--revision", "1", "--raw").stdout == "1"
    history = jetstream(server, "kv", "history", "CFG", "a").stdout
    assert "History for CFG > a" in history and history.count("│ a ") == 2
    declined = jetstream(server, "kv", "del", "CFG", "a", input="n\n")
    assert declined.stdout == "Skipping delete\n"
    jetstream(server, "kv", "del", "CFG", "a", "-f")
    assert one_line_error(jetstream(server, "kv", "get", "CFG", "a", check=False)) == (
        "key 'a' not found in bucket 'CFG'")
    assert one_line_error(jetstream(server, "kv", "get", "NOPE", "a", check=False)) == (
        "bucket 'NOPE' not found")
    jetstream(server, "kv", "del", "CFG", "-f")
    assert jetstream(server, "kv", "ls").stdout == "No Key-Value buckets found\n"


def test_ls_buckets_and_keys(server: ServerProcess) -> None:
    jetstream(server, "kv", "add", "CFG")
    jetstream(server, "kv", "add", "OTHER", "--storage", "memory")
    for key in ("x", "y"):
        jetstream(server, "kv", "put", "CFG", key, "v")
    table = jetstream(server, "kv", "ls").stdout.splitlines()
    assert [c.strip() for c in table[3].split("│")[1:-1]] == [
        "Bucket", "Description", "Created", "Size", "Values", "Last Update"]
    assert sorted(jetstream(server, "kv", "ls", "-n").stdout.split()) == ["CFG", "OTHER"]
    assert sorted(jetstream(server, "kv", "ls", "CFG").stdout.split()) == ["x", "y"]
    assert sorted(jetstream_json(server, "kv", "ls", "CFG")) == ["x", "y"]
    assert jetstream(server, "kv", "ls", "OTHER").stdout == "No keys found in bucket\n"
    assert jetstream_json(server, "stream", "ls") == []  # KV streams are hidden
    assert sorted(jetstream_json(server, "stream", "-a", "ls")) == ["KV_CFG", "KV_OTHER"]
    storage = jetstream_json(server, "stream", "info", "KV_OTHER")["config"]["storage"]
    assert storage == "memory"


def test_watch_prints_history_and_updates(server: ServerProcess) -> None:
    jetstream(server, "kv", "add", "CFG", "--history", "3")
    jetstream(server, "kv", "put", "CFG", "a", "1")
    # the history's one entry is the line it is ready with
    watch = start_cli(server, "kv", "watch", "CFG", "--history", ready="PUT CFG > a: 1",
                      ready_on="stdout")
    try:
        assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] PUT CFG > a: 1\n",
                            watch.stdout.seen[0])
        jetstream(server, "kv", "put", "CFG", "b", "2")
        assert (watch.stdout.next() or "").endswith("PUT CFG > b: 2\n")
        jetstream(server, "kv", "del", "CFG", "b", "-f")
        assert (watch.stdout.next() or "").endswith("DELETE CFG > b\n")
    finally:
        status = watch.interrupt()
    assert status == 130
    assert "Traceback" not in watch.stderr.rest()
