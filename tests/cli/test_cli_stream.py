"""`jetstream stream ...` against both servers: natscli's flags, questions, tables and
`--json`, compared with nats-server where the answers should match."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from cli_helpers import jetstream, jetstream_json, normalize, one_line_error

from jetstream_testing.process import ServerProcess

ADD = ("stream", "add", "ORDERS", "--subjects", "orders.>", "--storage", "file",
       "--retention", "limits", "--max-age", "24h", "--defaults")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split("│")[1:-1]]


def _scenario(server: ServerProcess) -> None:
    jetstream(server, *ADD)
    jetstream(server, "pub", "orders.new", "Order #{{.Count}}", "--count", "3", "-H", "K:v{{Count}}")
    jetstream(server, "stream", "add", "EVENTS", "--subjects", "events.*", "--defaults",
              "--max-msgs", "10", "--max-bytes", "1MB", "--max-msg-size", "1KB", "--discard",
              "new", "--retention", "interest", "--description", "events", "--dupe-window", "1m",
              "--deny-delete", "--allow-rollup", "--max-msgs-per-subject", "3")


def test_add_with_defaults_builds_natscli_config(server: ServerProcess) -> None:
    _scenario(server)
    config = jetstream_json(server, "stream", "info", "EVENTS")["config"]
    assert {k: config[k] for k in (
        "name", "subjects", "retention", "max_msgs", "max_bytes", "max_msg_size", "discard",
        "storage", "num_replicas", "duplicate_window", "max_msgs_per_subject", "deny_delete",
        "deny_purge", "allow_rollup_hdrs", "description", "max_age", "allow_direct")} == {
        "name": "EVENTS", "subjects": ["events.*"], "retention": "interest", "max_msgs": 10,
        "max_bytes": 1 << 20, "max_msg_size": 1024, "discard": "new", "storage": "file",
        "num_replicas": 1, "duplicate_window": 60 * 10**9, "max_msgs_per_subject": 3,
        "deny_delete": True, "deny_purge": False, "allow_rollup_hdrs": True,
        "description": "events", "max_age": 0, "allow_direct": True}
    orders = jetstream_json(server, "stream", "info", "ORDERS")["config"]
    assert orders["max_age"] == 24 * 3600 * 10**9
    assert orders["duplicate_window"] == 120 * 10**9
    assert orders["max_msgs"] == -1 and orders["max_bytes"] == -1


def test_add_asks_natscli_questions_on_stdin(server: ServerProcess) -> None:
    answers = ["ASK", "ask.>", "memory", "1", "Work Queue", "New", "100", "5", "10MB", "1h",
               "1KB", "30s", "y", "n", "y"]
    result = jetstream(server, "stream", "add", "--json", input="\n".join(answers) + "\n")
    prompts = [p.split(" (")[0].split(" [")[0].strip().rstrip(":")
               for p in result.stderr.split("? ") if p.strip()]
    assert prompts == ["Stream Name", "Subjects", "Storage", "Replication", "Retention Policy",
                       "Discard Policy", "Stream Messages Limit", "Per Subject Messages Limit",
                       "Total Stream Size", "Message TTL", "Max Message Size",
                       "Duplicate tracking time window", "Allow message Roll-ups",
                       "Allow message deletion", "Allow purging subjects or the entire stream"]
    config = json.loads(result.stdout)["config"]
    assert {k: config[k] for k in (
        "name", "subjects", "storage", "retention", "discard", "max_msgs",
        "max_msgs_per_subject", "max_bytes", "max_age", "max_msg_size", "duplicate_window",
        "allow_rollup_hdrs", "deny_delete", "deny_purge")} == {
        "name": "ASK", "subjects": ["ask.>"], "storage": "memory", "retention": "workqueue",
        "discard": "new", "max_msgs": 100, "max_msgs_per_subject": 5, "max_bytes": 10 << 20,
        "max_age": 3600 * 10**9, "max_msg_size": 1024, "duplicate_window": 30 * 10**9,
        "allow_rollup_hdrs": True, "deny_delete": True, "deny_purge": False}


def test_add_empty_answers_take_defaults(server: ServerProcess) -> None:
    result = jetstream(server, "stream", "add", "DFLT", "--subjects", "d.>", "--json",
                       input="\n" * 15)
    config = json.loads(result.stdout)["config"]
    assert (config["storage"], config["retention"], config["discard"], config["max_msgs"],
            config["max_bytes"], config["duplicate_window"], config["deny_delete"]) == (
        "file", "limits", "old", -1, -1, 120 * 10**9, False)


def test_add_without_answers_is_one_line_error(server: ServerProcess) -> None:
    result = jetstream(server, "stream", "add", "X", "--subjects", "x", check=False)
    assert one_line_error(result) == (
        "no answer to 'Storage (file, memory)' on standard input: pass the value as a flag "
        "or use --defaults")
    assert jetstream_json(server, "stream", "ls") == []


@pytest.mark.parametrize(("args", "message"), [
    (("--storage", "bogus"), "Invalid value for '--storage': 'bogus' is not one of"),
    (("--max-age", "24x"), "Invalid value for '--max-age': invalid duration '24x'"),
    (("--max-bytes", "1XB"), "Invalid value for '--max-bytes': invalid bytes specification"),
    (("--replicas", "two"), "Invalid value for '--replicas': 'two' is not a valid integer"),
])
def test_bad_flag_values(server: ServerProcess, args: tuple[str, ...], message: str) -> None:
    result = jetstream(server, "stream", "add", "X", "--subjects", "x", "--defaults", *args,
                       check=False)
    assert one_line_error(result).startswith(message)
    assert result.returncode == 2


def test_unknown_stream_is_one_line_error(server: ServerProcess) -> None:
    for args in (("stream", "info", "NOPE"), ("stream", "purge", "NOPE", "-f"),
                 ("stream", "rm", "NOPE", "-f"), ("stream", "get", "NOPE", "1"),
                 ("stream", "edit", "NOPE", "--description", "x", "-f")):
        assert one_line_error(jetstream(server, *args, check=False)) == "stream 'NOPE' not found"


def test_server_error_is_reported(server: ServerProcess) -> None:
    jetstream(server, *ADD)
    result = jetstream(server, "stream", "add", "OTHER", "--subjects", "orders.>", "--defaults",
                       check=False)
    assert "subjects overlap with an existing stream" in one_line_error(result)


def test_ls_table_names_and_json(server: ServerProcess) -> None:
    assert jetstream(server, "stream", "ls").stdout == "No Streams defined\n"
    _scenario(server)
    lines = jetstream(server, "stream", "ls").stdout.splitlines()
    assert _cells(lines[3]) == ["Name", "Description", "Created", "Messages", "Size",
                                "Last Message"]
    rows = [_cells(line) for line in lines[5:7]]
    assert [(r[0], r[1], r[3]) for r in rows] == [("EVENTS", "events", "0"), ("ORDERS", "", "3")]
    assert rows[0][5] == "never"
    assert jetstream_json(server, "stream", "ls") == ["EVENTS", "ORDERS"]
    assert jetstream(server, "stream", "ls", "-n").stdout.split() == ["EVENTS", "ORDERS"]
    filtered = jetstream(server, "stream", "ls", "--subject", "orders.new").stdout
    assert "Streams matching orders.new" in filtered and "EVENTS" not in filtered


def test_info_text(server: ServerProcess) -> None:
    _scenario(server)
    text = jetstream(server, "stream", "info", "ORDERS").stdout
    assert text.startswith("Information for Stream ORDERS created ")
    lines = text.splitlines()
    for section in ("Options:", "Limits:", "State:"):
        assert section in lines
    assert "Messages: 3" in [line.strip() for line in lines]
    assert any(line.strip().startswith("Last Sequence: 3 @ ") for line in lines)
    state = jetstream(server, "stream", "state", "ORDERS").stdout
    assert state.startswith("State for Stream ORDERS created ") and "Options:" not in state


def test_info_config_matches_nats_server(server: ServerProcess, reference: ServerProcess) -> None:
    _scenario(server)
    _scenario(reference)
    for name in ("ORDERS", "EVENTS"):
        ours = normalize(jetstream_json(server, "stream", "info", name)["config"])
        theirs = normalize(jetstream_json(reference, "stream", "info", name)["config"])
        ours.pop("metadata", None)
        theirs.pop("metadata", None)
        assert ours == theirs
    assert jetstream_json(server, "stream", "ls") == jetstream_json(reference, "stream", "ls")
    assert normalize(jetstream_json(server, "stream", "get", "ORDERS", "2")) == normalize(
        jetstream_json(reference, "stream", "get", "ORDERS", "2"))


def test_info_state_matches_nats_server(server: ServerProcess, reference: ServerProcess,
                                        bundled_differs: Callable[[str], None]) -> None:
    bundled_differs("stream state bytes: the bundled server counts 37 bytes for an 11-byte "
                    "message on orders.new where nats-server counts 51 (its file store record "
                    "size: 22 + subject + headers + data + 8)")
    _scenario(server)
    _scenario(reference)
    ours = normalize(jetstream_json(server, "stream", "info", "ORDERS")["state"])
    theirs = normalize(jetstream_json(reference, "stream", "info", "ORDERS")["state"])
    assert ours == theirs


def test_info_metadata_and_cluster_match_nats_server(
        server: ServerProcess, reference: ServerProcess) -> None:
    jetstream(server, *ADD)
    jetstream(reference, *ADD)
    ours = normalize(jetstream_json(server, "stream", "info", "ORDERS"))
    theirs = normalize(jetstream_json(reference, "stream", "info", "ORDERS"))
    assert (ours["config"].get("metadata"), ours.get("cluster")) == (
        theirs["config"].get("metadata"), theirs.get("cluster"))


def test_edit_dry_run_force_and_no_difference(server: ServerProcess) -> None:
    jetstream(server, *ADD)
    dry = jetstream(server, "stream", "edit", "ORDERS", "--description", "new", "--dry-run",
                    check=False)
    assert dry.returncode == 1
    assert dry.stdout.startswith("Differences (-old +new):\n")
    assert '+  "description": "new",' in dry.stdout
    assert "description" not in jetstream_json(server, "stream", "info", "ORDERS")["config"]
    declined = jetstream(server, "stream", "edit", "ORDERS", "--max-msgs", "5", input="n\n")
    assert "Really edit Stream ORDERS" in declined.stderr
    assert jetstream_json(server, "stream", "info", "ORDERS")["config"]["max_msgs"] == -1
    edited = jetstream(server, "stream", "edit", "ORDERS", "--description", "new", "--max-msgs",
                       "5", "--subjects", "orders.>,more.>", "-f")
    assert "Stream ORDERS was updated" in edited.stdout
    config = jetstream_json(server, "stream", "info", "ORDERS")["config"]
    assert (config["description"], config["max_msgs"], config["subjects"]) == (
        "new", 5, ["orders.>", "more.>"])
    same = jetstream(server, "stream", "edit", "ORDERS", "--description", "new", "-f")
    assert same.stdout == "No difference in configuration\n"


def test_purge_get_rmm_and_rm(server: ServerProcess) -> None:
    _scenario(server)
    got = jetstream(server, "stream", "get", "ORDERS", "2").stdout
    assert got.startswith("Item: ORDERS#2 received ")
    assert " on Subject orders.new\n\nHeaders:\n  K: v2\n\nOrder #2\n" in got
    last = jetstream_json(server, "stream", "get", "ORDERS", "--last-for", "orders.new")
    assert last["seq"] == 3 and last["subject"] == "orders.new"
    missing = jetstream(server, "stream", "get", "ORDERS", "99", check=False)
    assert one_line_error(missing).startswith("could not retrieve ORDERS#99: ")
    jetstream(server, "stream", "rmm", "ORDERS", "1", "-f")
    assert jetstream_json(server, "stream", "info", "ORDERS")["state"]["messages"] == 2
    purged = jetstream(server, "stream", "purge", "ORDERS", "-f", "--keep", "1")
    assert purged.stdout.startswith("Purged 1 messages from ORDERS\n\nState for Stream ORDERS")
    declined = jetstream(server, "stream", "purge", "ORDERS", input="n\n")
    assert "Really purge Stream ORDERS" in declined.stderr
    assert jetstream_json(server, "stream", "info", "ORDERS")["state"]["messages"] == 1
    jetstream(server, "stream", "rm", "ORDERS", input="y\n")
    jetstream(server, "stream", "rm", "EVENTS", "-f")
    assert jetstream_json(server, "stream", "ls") == []
    assert one_line_error(jetstream(server, "stream", "rm", "-f", check=False)) == (
        "--force requires a stream name")


def test_view_pages_and_asks(server: ServerProcess) -> None:
    _scenario(server)
    first_page = jetstream(server, "stream", "view", "ORDERS", "2", input="n\n").stdout
    assert "[1] Subject: orders.new Received: " in first_page
    assert "[2] Subject: orders.new" in first_page and "[3]" not in first_page
    everything = jetstream(server, "stream", "view", "ORDERS", "2", input="y\n").stdout
    assert "  K: v3\n\nOrder #3\n" in everything
    raw = jetstream(server, "stream", "view", "ORDERS", "--raw", "--id", "2").stdout
    assert raw.split() == ["Order", "#2", "Order", "#3"]


def test_report_table_and_json(server: ServerProcess) -> None:
    _scenario(server)
    text = jetstream(server, "stream", "report").stdout.splitlines()
    assert text[0] == "Obtaining Stream stats"
    assert _cells(text[5]) == ["Stream", "Storage", "Placement", "Consumers", "Messages",
                               "Bytes", "Lost", "Deleted", "API Level", "Replicas"]
    rows = {r[0]: r for r in (_cells(line) for line in text[7:9])}
    assert rows["ORDERS"][:5] == ["ORDERS", "File", "", "0", "3"]
    assert rows["EVENTS"][6:9] == ["0", "0", "0"]
    report = {r["stream"]: r for r in jetstream_json(server, "stream", "report")}
    assert report["ORDERS"]["messages"] == 3 and report["EVENTS"]["consumers"] == 0
