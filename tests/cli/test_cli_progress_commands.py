"""Progress on long work, as a user sees it: `stream backup`, `stream restore`, `pub --count`
and `object put|get` run against both servers with stderr on a pseudo-terminal draw a
progress line that ends at the right total; on pipes (a script, a log file) and with
`--no-progress` they draw nothing and print what they printed before; natscli's thresholds
(a count above 20, an object above 20 KiB) hold. Small payloads: a few hundred KiB at most."""

from __future__ import annotations

import os
import re
from pathlib import Path

from cli_helpers import jetstream, jetstream_json, jetstream_on_terminal

from jetstream_cli.units import ibytes
from jetstream_testing.process import ServerProcess

# A final progress line: label, a full bar, done / total, 100%, the rate, the time taken.
FINAL = r"\[#{20}\] (?P<done>[^/]+) / (?P<total>.+?) 100% \S+ (\S+ )?\S+/s in \d+(\.\d)?s"


def frames(terminal: str) -> list[str]:
    """Each drawing of a line on the terminal (between carriage returns and line ends)."""
    return [f.rstrip() for f in re.split(r"[\r\n]", terminal) if f.strip()]


def final_line(terminal: str, label: str) -> re.Match[str]:
    found = [m for f in frames(terminal) if f.startswith(label + " ")
             and (m := re.fullmatch(re.escape(label) + " " + FINAL, f))]
    assert len(found) == 1, f"no single final {label!r} progress line in {terminal!r}"
    return found[0]


def assert_no_progress(text: str) -> None:
    assert "\r" not in text and "[#" not in text and "[-" not in text and "/s in " not in text, text


def _stream_with(server: ServerProcess, count: int) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    jetstream(server, "pub", "orders.new", "order {{Count}} " + "x" * 200, "--count", str(count),
              "-J", "-q")


def test_pub_count_draws_messages_sent_on_a_terminal_instead_of_a_line_each(
        server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    shown = jetstream_on_terminal(server, "pub", "orders.new", "order {{Count}}", "--count", "60",
                                  "-J")
    final = final_line(shown.terminal, "Published")
    assert (final["done"], final["total"]) == ("60", "60 msgs")
    assert "Stored in Stream" not in shown.terminal and "Published 7 bytes" not in shown.terminal
    assert jetstream_json(server, "stream", "info", "ORDERS")["state"]["messages"] == 60


def test_pub_count_on_pipes_prints_a_line_per_message_and_no_progress(server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    piped = jetstream(server, "pub", "orders.new", "order {{Count}}", "--count", "30", "-J")
    assert_no_progress(piped.stderr + piped.stdout)
    assert piped.stderr.count("Stored in Stream: ORDERS Sequence: ") == 30
    core = jetstream(server, "pub", "orders.new", "order {{Count}}", "--count", "25")
    assert_no_progress(core.stderr + core.stdout)
    assert core.stderr.count('Published 7 bytes to "orders.new"') == 9
    assert core.stderr.count('Published 8 bytes to "orders.new"') == 16


def test_pub_progress_only_above_natscli_threshold_and_not_with_no_progress(
        server: ServerProcess) -> None:
    at_threshold = jetstream_on_terminal(server, "pub", "orders.new", "hello", "--count", "20")
    assert_no_progress(at_threshold.terminal)
    assert at_threshold.terminal.count('Published 5 bytes to "orders.new"') == 20
    turned_off = jetstream_on_terminal(server, "pub", "orders.new", "hello", "--count", "40",
                                       "--no-progress")
    assert_no_progress(turned_off.terminal)
    assert turned_off.terminal.count('Published 5 bytes to "orders.new"') == 40
    core = jetstream_on_terminal(server, "pub", "orders.new", "hello", "--count", "40")
    final = final_line(core.terminal, "Published")
    assert (final["done"], final["total"]) == ("40", "40 msgs")
    assert "Published 5 bytes" not in core.terminal


def test_backup_and_restore_draw_bytes_on_a_terminal(server: ServerProcess, tmp_path: Path) -> None:
    _stream_with(server, 300)
    expected = jetstream_json(server, "stream", "info", "ORDERS")["state"]["bytes"]
    target = tmp_path / "backup"
    backup = jetstream_on_terminal(server, "stream", "backup", "ORDERS", str(target))
    final = final_line(backup.terminal, "Backup ORDERS")
    assert final["done"] == final["total"] == ibytes(expected)
    assert backup.stdout.startswith(f'Starting backup of Stream "ORDERS" with {ibytes(expected)}')
    assert re.search(r'chunks for stream "ORDERS" in \d+ms, \S+ \S+ uncompressed\n', backup.stdout)
    jetstream(server, "stream", "rm", "ORDERS", "-f")
    restore = jetstream_on_terminal(server, "stream", "restore", str(target))
    final = final_line(restore.terminal, "Restore ORDERS")
    size = ibytes(os.path.getsize(target / "stream.tar.s2"))
    assert final["done"] == final["total"] == size
    assert jetstream_json(server, "stream", "info", "ORDERS")["state"]["messages"] == 300


def test_backup_and_restore_quiet_on_pipes_and_with_no_progress(server: ServerProcess,
                                                                 tmp_path: Path) -> None:
    _stream_with(server, 50)
    piped = jetstream(server, "stream", "backup", "ORDERS", str(tmp_path / "a"))
    assert_no_progress(piped.stdout + piped.stderr)
    assert piped.stderr == ""
    off = jetstream_on_terminal(server, "stream", "backup", "ORDERS", str(tmp_path / "b"),
                                "--no-progress")
    assert off.terminal == ""
    jetstream(server, "stream", "rm", "ORDERS", "-f")
    restored = jetstream(server, "stream", "restore", str(tmp_path / "a"))
    assert_no_progress(restored.stdout + restored.stderr)
    assert restored.stderr == ""
    jetstream(server, "stream", "rm", "ORDERS", "-f")
    off = jetstream_on_terminal(server, "stream", "restore", str(tmp_path / "b"), "--no-progress")
    assert off.terminal == ""
    assert jetstream_json(server, "stream", "info", "ORDERS")["state"]["messages"] == 50


def test_object_put_and_get_draw_bytes_on_a_terminal(server: ServerProcess, tmp_path: Path) -> None:
    data = os.urandom(300 * 1024)  # three chunks of nats-py's 128 KiB
    source = tmp_path / "blob.bin"
    source.write_bytes(data)
    jetstream(server, "object", "add", "FILES")
    put = jetstream_on_terminal(server, "object", "put", "FILES", str(source), "--name", "blob")
    final = final_line(put.terminal, "Put blob")
    assert final["done"] == final["total"] == ibytes(len(data))
    assert "Object information for FILES > blob" in put.stdout
    copy = tmp_path / "copy.bin"
    get = jetstream_on_terminal(server, "object", "get", "FILES", "blob", "-O", str(copy))
    final = final_line(get.terminal, "Get blob")
    assert final["done"] == final["total"] == ibytes(len(data))
    assert copy.read_bytes() == data


def test_object_put_and_get_quiet_on_pipes_small_objects_and_no_progress(
        server: ServerProcess, tmp_path: Path) -> None:
    big, small = tmp_path / "big.bin", tmp_path / "small.bin"
    big.write_bytes(os.urandom(64 * 1024))
    small.write_bytes(os.urandom(20480))  # natscli's threshold: not above it
    jetstream(server, "object", "add", "FILES")
    piped = jetstream(server, "object", "put", "FILES", str(big), "--name", "big")
    assert_no_progress(piped.stdout + piped.stderr)
    got = jetstream(server, "object", "get", "FILES", "big", "-O", str(tmp_path / "b1"))
    assert_no_progress(got.stdout + got.stderr)
    assert (tmp_path / "b1").read_bytes() == big.read_bytes()
    for args in (("put", "FILES", str(small), "--name", "small"),
                 ("get", "FILES", "small", "-O", str(tmp_path / "s1")),
                 ("put", "FILES", str(big), "--name", "big2", "--no-progress"),
                 ("get", "FILES", "big2", "-O", str(tmp_path / "b2"), "--no-progress")):
        assert jetstream_on_terminal(server, "object", *args).terminal == ""
    assert (tmp_path / "s1").read_bytes() == small.read_bytes()
    assert (tmp_path / "b2").read_bytes() == big.read_bytes()
