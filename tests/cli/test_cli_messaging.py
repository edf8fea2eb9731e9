"""`jetstream pub | sub | req | reply` against both servers: natscli's templates, headers,
output lines and exit conditions."""

from __future__ import annotations

import re

from cli_helpers import jetstream, jetstream_json, one_line_error, start_cli

from jetstream_testing.process import ServerProcess


def test_pub_templates_headers_and_count(server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    result = jetstream(server, "pub", "orders.{{Count}}", "n={{ .Count }} c={{Count}}", "--count",
                       "3", "-H", "Seq:{{.Count}}", "-H", "Fixed: yes")
    assert re.findall(r'Published (\d+) bytes to "(orders\.\d)"', result.stderr) == [
        ("7", "orders.1"), ("7", "orders.2"), ("7", "orders.3")]
    message = jetstream_json(server, "stream", "get", "ORDERS", "2")
    assert message["subject"] == "orders.2"
    text = jetstream(server, "stream", "get", "ORDERS", "3").stdout
    assert "  Seq: 3\n" in text and "  Fixed: yes\n" in text and "\nn=3 c=3\n" in text
    plain = jetstream(server, "pub", "orders.x", "{{Count}}", "--no-templates")
    assert 'Published 9 bytes to "orders.x"' in plain.stderr


def test_pub_jetstream_ack_stdin_and_errors(server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    acked = jetstream(server, "pub", "-J", "orders.new", "first")
    assert re.search(r"\d\d:\d\d:\d\d Stored in Stream: ORDERS Sequence: 1\n", acked.stderr)
    duplicate = jetstream(server, "pub", "-J", "orders.new", "again", "-H", "Nats-Msg-Id:1",
                          "--count", "2")
    assert duplicate.stderr.count("Duplicate: true") == 1
    piped = jetstream(server, "pub", "orders.new", input="from stdin")
    assert "Reading payload from STDIN" in piped.stderr
    assert jetstream_json(server, "stream", "get", "ORDERS", "3")["data"] == "ZnJvbSBzdGRpbg=="
    quiet = jetstream(server, "pub", "orders.new", "q", "-q")
    assert quiet.stderr == ""
    nobody = jetstream(server, "pub", "-J", "nobody.here", "x", check=False)
    assert one_line_error(nobody) == "no stream is listening on 'nobody.here' (no responders)"
    bad = jetstream(server, "pub", "orders.new", "x", "-H", "novalue", check=False)
    assert one_line_error(bad) == "invalid header 'novalue': use K:V"
    unknown = jetstream(server, "pub", "orders.new", "{{ Nope }}")
    assert 'Could not parse body template: function "Nope" not defined' in unknown.stderr


def test_sub_prints_messages_until_count(server: ServerProcess) -> None:
    sub = start_cli(server, "sub", "greet.>", "--count", "2", ready="Subscribing on greet.>")
    jetstream(server, "pub", "greet.a", "hello", "-H", "K:v")
    jetstream(server, "pub", "greet.b", "world")
    stdout = sub.finish()
    assert stdout == ('[#1] Received on "greet.a"\nK: v\n\nhello\n\n'
                      '[#2] Received on "greet.b"\nworld\n\n')


def test_sub_stream_reads_from_the_start(server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    jetstream(server, "pub", "orders.new", "o{{Count}}", "--count", "3")
    result = jetstream(server, "sub", "orders.>", "--all", "-T")
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"\[#1\] Received JetStream message: stream: ORDERS seq: 1 / pending: 2 "
                        r"/ subject: orders.new / time: .+", lines[0])
    assert [line for line in lines if line.startswith("o")] == ["o1", "o2", "o3"]
    assert "from first received message" in result.stderr
    raw = jetstream(server, "sub", "--stream", "ORDERS", "--start-sequence", "2", "-T", "--raw")
    assert raw.stdout.split() == ["o2", "o3"]
    assert jetstream_json(server, "consumer", "ls", "ORDERS") == []


def test_sub_argument_errors(server: ServerProcess) -> None:
    assert one_line_error(jetstream(server, "sub", check=False)) == "subject is required"
    assert one_line_error(jetstream(server, "sub", "a", "-T", check=False)) == (
        "--terminate-at-end is only supported for JetStream subscriptions")


def test_req_reply(server: ServerProcess) -> None:
    service = start_cli(server, "reply", "svc.echo", "pong {{.Request}} #{{Count}}", "--count",
                        "2", ready='Listening on "svc.echo" in group "NATS-RPLY-22"')
    first = jetstream(server, "req", "svc.echo", "ping")
    assert first.stdout == "pong ping #0\n\n"
    assert 'Sending request on "svc.echo"' in first.stderr
    assert re.search(r"Received with rtt \S+", first.stderr)
    second = jetstream(server, "req", "svc.echo", "again", "--raw")
    assert second.stdout == "pong again #1\n"
    served = service.finish()
    assert "ping" in served and "again" in served


def test_reply_echo_and_command(server: ServerProcess) -> None:
    echo = start_cli(server, "reply", "svc.echo", "--count", "1", ready="Listening on")
    answer = jetstream(server, "req", "svc.echo", "hi", "-H", "X:1")
    assert answer.stdout == "hi\n\n"
    assert re.search(r"NATS-Reply-Counter: 0", answer.stderr)
    echo.finish()
    command = start_cli(server, "reply", "svc.cmd", "--command", "echo got {{1}} {{.Request}}",
                        "--count", "1", ready="Listening on")
    assert jetstream(server, "req", "svc.cmd", "body", "--raw").stdout == "got cmd body\n"
    command.finish()


def test_req_without_responders_and_timeout(server: ServerProcess) -> None:
    nobody = jetstream(server, "req", "nobody.home", "x")
    assert "No responders are available" in nobody.stderr
    jetstream(server, "stream", "add", "SINK", "--subjects", "sink.>", "--defaults",
              "--no-ack")
    silent = jetstream(server, "--timeout", "500ms", "req", "sink.x", "x", check=False)
    assert one_line_error(silent) == "no reply received on 'sink.x' within 0.5s"


def test_sub_work_queue_stream_reads_directly(server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "WQ", "--subjects", "wq.>", "--retention", "work",
              "--defaults")
    jetstream(server, "pub", "wq.a", "w{{Count}}", "--count", "2")
    result = jetstream(server, "sub", "wq.a", "--all", "-T")
    assert re.match(r"\[#1\] Received JetStream message \(direct\): stream: WQ seq 1 / "
                    r"subject: wq.a / time: .+\nw1\n\n\[#2\]", result.stdout)
    # A direct read takes no part in retention: the work queue still holds both messages.
    assert jetstream_json(server, "stream", "info", "WQ")["state"]["messages"] == 2
    assert jetstream_json(server, "consumer", "ls", "WQ") == []
