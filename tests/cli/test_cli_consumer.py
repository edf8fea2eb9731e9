"""`jetstream consumer ...` against both servers: natscli's flags, questions, `next`,
tables and `--json`, compared with nats-server where the answers should match."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from cli_helpers import jetstream, jetstream_json, normalize, one_line_error

from jetstream_testing.process import ServerProcess

PULL = ("consumer", "add", "ORDERS", "order-processor", "--pull", "--deliver", "all", "--ack",
        "explicit", "--defaults")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split("│")[1:-1]]


def _stream(server: ServerProcess, messages: int = 3) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    if messages:
        jetstream(server, "pub", "orders.new", "Order {{Count}}", "--count", str(messages))


def test_add_with_defaults_builds_natscli_config(server: ServerProcess) -> None:
    _stream(server)
    jetstream(server, *PULL)
    jetstream(server, "consumer", "add", "ORDERS", "push", "--target", "deliver.here",
              "--deliver", "last", "--ack", "none", "--filter", "orders.new", "--defaults")
    jetstream(server, "consumer", "add", "ORDERS", "tuned", "--pull", "--deliver", "2", "--ack",
              "all", "--max-deliver", "5", "--max-pending", "10", "--wait", "10s",
              "--backoff", "linear", "--backoff-steps", "3", "--backoff-min", "1s",
              "--backoff-max", "10s", "--description", "tuned", "--defaults")
    pull = jetstream_json(server, "consumer", "info", "ORDERS", "order-processor")["config"]
    assert {k: pull.get(k) for k in ("durable_name", "deliver_policy", "ack_policy",
                                      "replay_policy", "max_deliver", "deliver_subject")} == {
        "durable_name": "order-processor", "deliver_policy": "all", "ack_policy": "explicit",
        "replay_policy": "instant", "max_deliver": -1, "deliver_subject": None}
    push = jetstream_json(server, "consumer", "info", "ORDERS", "push")["config"]
    assert {k: push.get(k) for k in ("deliver_subject", "deliver_policy", "ack_policy",
                                      "filter_subject")} == {
        "deliver_subject": "deliver.here", "deliver_policy": "last", "ack_policy": "none",
        "filter_subject": "orders.new"}
    tuned = jetstream_json(server, "consumer", "info", "ORDERS", "tuned")["config"]
    assert {k: tuned.get(k) for k in ("deliver_policy", "opt_start_seq", "ack_policy",
                                       "max_deliver", "max_ack_pending", "backoff",
                                       "description")} == {
        "deliver_policy": "by_start_sequence", "opt_start_seq": 2, "ack_policy": "all",
        "max_deliver": 5, "max_ack_pending": 10, "backoff": [10**9, 4 * 10**9, 7 * 10**9],
        "description": "tuned"}


def test_backoff_ack_wait_matches_nats_server(server: ServerProcess, reference: ServerProcess) -> None:
    # nats-server: a backoff overrides ack_wait with its first value
    args = ("consumer", "add", "ORDERS", "tuned", "--pull", "--ack", "explicit", "--wait",
            "10s", "--backoff", "linear", "--backoff-steps", "3", "--backoff-min", "1s",
            "--backoff-max", "10s", "--defaults", "--json")
    waits = []
    for target in (server, reference):
        _stream(target, 0)
        waits.append(json.loads(jetstream(target, *args).stdout)["config"]["ack_wait"])
    assert waits[0] == waits[1] == 10**9


def test_add_asks_natscli_questions_on_stdin(server: ServerProcess) -> None:
    _stream(server, 0)
    answers = ["proc", "", "new", "all", "original", "orders.a orders.b", "4", "7", "y", "n"]
    result = jetstream(server, "consumer", "add", "ORDERS", "--json",
                       input="\n".join(answers) + "\n")
    prompts = [p.split(" (")[0].split(" [")[0].strip().rstrip(":")
               for p in result.stderr.split("? ") if p.strip()]
    assert prompts == ["Consumer name", "Delivery target", "Start policy", "Acknowledgment policy",
                       "Replay policy", "Filter Stream by subjects", "Maximum Allowed Deliveries",
                       "Maximum Acknowledgments Pending", "Deliver headers only without bodies",
                       "Add a Retry Backoff Policy"]
    config = json.loads(result.stdout)["config"]
    assert {k: config.get(k) for k in ("durable_name", "deliver_policy", "ack_policy",
                                        "replay_policy", "filter_subjects", "max_deliver",
                                        "max_ack_pending", "headers_only")} == {
        "durable_name": "proc", "deliver_policy": "new", "ack_policy": "all",
        "replay_policy": "original", "filter_subjects": ["orders.a", "orders.b"],
        "max_deliver": 4, "max_ack_pending": 7, "headers_only": True}


def test_next_acks_and_counts(server: ServerProcess) -> None:
    _stream(server)
    jetstream(server, *PULL)
    first = jetstream(server, "consumer", "next", "ORDERS", "order-processor", "--count", "2")
    lines = first.stdout.splitlines()
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] subj: orders.new / tries: 1 / cons seq: 1 / "
                        r"str seq: 1 / pending: 2", lines[0])
    assert first.stdout.count("Acknowledged message") == 2
    assert "Order 2" in lines
    unacked = jetstream(server, "consumer", "next", "ORDERS", "order-processor", "--no-ack",
                        "--raw")
    assert unacked.stdout == "Order 3\n"
    info = jetstream_json(server, "consumer", "info", "ORDERS", "order-processor")
    assert (info["num_ack_pending"], info["num_pending"], info["ack_floor"]["stream_seq"]) == (
        1, 0, 2)
    empty = jetstream(server, "--timeout", "1s", "consumer", "next", "ORDERS", "order-processor",
                      check=False)
    assert one_line_error(empty).startswith("no message received")
    assert one_line_error(jetstream(server, "consumer", "next", "ORDERS", "nope",
                                    check=False)) == "consumer 'nope' not found on stream 'ORDERS'"
    assert one_line_error(jetstream(server, "consumer", "next", "ORDERS", "order-processor",
                                    "--term", "--ack", check=False)) == (
        "can not both Acknowledge and Terminate message")


def test_next_refuses_push_consumers(server: ServerProcess) -> None:
    _stream(server)
    jetstream(server, "consumer", "add", "ORDERS", "push", "--target", "x", "--defaults")
    result = jetstream(server, "consumer", "next", "ORDERS", "push", check=False)
    assert one_line_error(result) == "consumer 'push' is not a Pull consumer"


def test_ls_info_report(server: ServerProcess) -> None:
    _stream(server)
    jetstream(server, *PULL)
    jetstream(server, "consumer", "next", "ORDERS", "order-processor")
    assert jetstream_json(server, "consumer", "ls", "ORDERS") == ["order-processor"]
    assert jetstream(server, "consumer", "ls", "ORDERS", "-n").stdout == "order-processor\n"
    table = jetstream(server, "consumer", "ls", "ORDERS").stdout.splitlines()
    assert _cells(table[3]) == ["Name", "Description", "Created", "Ack Pending", "Unprocessed",
                                "Last Delivery"]
    assert _cells(table[5])[3:5] == ["0", "2"]
    info = jetstream(server, "consumer", "info", "ORDERS", "order-processor").stdout
    assert info.startswith("Information for Consumer ORDERS > order-processor created ")
    for row in ("Unprocessed Messages: 2", "Outstanding Acks: 0 out of maximum 1,000",
                "Waiting Pulls: 0 of maximum 512"):
        assert row in [line.strip() for line in info.splitlines()]
    report = jetstream(server, "consumer", "report", "ORDERS").stdout.splitlines()
    assert _cells(report[5])[:8] == ["order-processor", "Pull", "Explicit", "30.00s", "0", "0",
                                     "2 / 66%", "1"]
    rows = jetstream_json(server, "consumer", "report", "ORDERS")
    assert rows[0]["unprocessed"] == 2 and rows[0]["ack_floor"] == 1
    assert jetstream(server, "consumer", "ls", "ORDERS").stdout.count("order-processor") == 1


def test_edit_and_rm(server: ServerProcess) -> None:
    _stream(server)
    jetstream(server, *PULL)
    dry = jetstream(server, "consumer", "edit", "ORDERS", "order-processor", "--max-deliver",
                    "9", "--dry-run", check=False)
    assert dry.returncode == 1 and '"max_deliver": 9' in dry.stdout
    edited = jetstream(server, "consumer", "edit", "ORDERS", "order-processor", "--max-deliver",
                       "9", "--description", "d", "-f")
    assert "Maximum Deliveries: 9" in edited.stdout
    config = jetstream_json(server, "consumer", "info", "ORDERS", "order-processor")["config"]
    assert (config["max_deliver"], config["description"]) == (9, "d")
    jetstream(server, "consumer", "rm", "ORDERS", "order-processor", input="n\n")
    assert jetstream_json(server, "consumer", "ls", "ORDERS") == ["order-processor"]
    jetstream(server, "consumer", "rm", "ORDERS", "order-processor", "-f")
    assert jetstream_json(server, "consumer", "ls", "ORDERS") == []
    assert jetstream(server, "consumer", "ls", "ORDERS").stdout == "No Consumers defined\n"
    assert one_line_error(jetstream(server, "consumer", "rm", "ORDERS", "gone", "-f",
                                    check=False)) == "consumer 'gone' not found on stream 'ORDERS'"
    assert one_line_error(jetstream(server, "consumer", "ls", "NOPE", check=False)) == (
        "stream 'NOPE' not found")


def test_info_config_matches_nats_server(server: ServerProcess, reference: ServerProcess) -> None:
    for target in (server, reference):
        _stream(target)
        jetstream(target, *PULL)
        jetstream(target, "consumer", "next", "ORDERS", "order-processor")
    ours = normalize(jetstream_json(server, "consumer", "info", "ORDERS", "order-processor"))
    theirs = normalize(jetstream_json(reference, "consumer", "info", "ORDERS", "order-processor"))
    ours["config"].pop("metadata", None)
    theirs["config"].pop("metadata", None)
    assert ours == theirs
    assert jetstream_json(server, "consumer", "report", "ORDERS") == jetstream_json(
        reference, "consumer", "report", "ORDERS")


def test_info_metadata_matches_nats_server(server: ServerProcess, reference: ServerProcess) -> None:
    for target in (server, reference):
        _stream(target, 0)
        jetstream(target, *PULL)
    ours = normalize(jetstream_json(server, "consumer", "info", "ORDERS", "order-processor"))
    theirs = normalize(jetstream_json(reference, "consumer", "info", "ORDERS", "order-processor"))
    assert ours["config"].get("metadata") == theirs["config"].get("metadata")
