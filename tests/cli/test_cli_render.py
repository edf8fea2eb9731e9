"""jetstream_cli.render: natscli's rounded tables and `label: value` columns."""

from __future__ import annotations

from jetstream_cli.render import Columns, Nanos, Table, cell


def test_table_matches_natscli_layout() -> None:
    table = Table("Streams", ["Name", "Description", "Created", "Messages", "Size",
                              "Last Message"])
    table.add_row("ORDERS", "", "2021-03-10 09:27:41", "1", "104 B", "3.01s")
    assert table.render() == "\n".join([
        "╭──────────────────────────────────────────────────────────────────────────────╮",
        "│                                   Streams                                    │",
        "├────────┬─────────────┬─────────────────────┬──────────┬───────┬──────────────┤",
        "│ Name   │ Description │ Created             │ Messages │ Size  │ Last Message │",
        "├────────┼─────────────┼─────────────────────┼──────────┼───────┼──────────────┤",
        "│ ORDERS │             │ 2021-03-10 09:27:41 │ 1        │ 104 B │ 3.01s        │",
        "╰────────┴─────────────┴─────────────────────┴──────────┴───────┴──────────────╯",
    ])


def test_table_right_aligns_raw_integers() -> None:
    table = Table("T", ["Name", "Count"])
    table.add_row("a", 5)
    table.add_row("b", 12345)
    lines = table.render().splitlines()
    assert lines[3] == "│ Name │ Count  │"
    assert lines[5] == "│ a    │      5 │"
    assert lines[6] == "│ b    │ 12,345 │"


def test_columns_layout() -> None:
    cols = Columns("Information for Stream X created 2024-01-01 00:00:00")
    cols.row("Subjects", ["a", "b"])
    cols.row("Replicas", 1)
    cols.title("Options")
    cols.row("Acknowledgments", True)
    cols.row("Duplicate Window", Nanos(120 * 10**9))
    cols.row("", "continued")
    cols.line()
    cols.title("State")
    cols.row("Messages", 12345)
    assert cols.render() == "\n".join([
        "Information for Stream X created 2024-01-01 00:00:00",
        "",
        "          Subjects: a, b",
        "          Replicas: 1",
        "",
        "Options:",
        "",
        "   Acknowledgments: true",
        "  Duplicate Window: 2m0s",
        "                    continued",
        "",
        "State:",
        "",
        "          Messages: 12,345",
        "",
    ])


def test_cell() -> None:
    assert cell(False) == "false"
    assert cell(1234) == "1,234"
    assert cell(None) == ""
    assert cell(["x", 2]) == "x, 2"
