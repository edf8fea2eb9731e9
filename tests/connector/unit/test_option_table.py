"""The option table (options/table.py): one declaration per option, one grammar per kind,
the same parsing rules for every option, and the docs/options.md sections generated from it."""

from __future__ import annotations

from typing import Any

import pytest

from spark_jetstream.options import OptionError
from spark_jetstream.options.table import (
    OPTIONS,
    SPARK_WRITE_OPTIONS,
    Bool,
    Count,
    Duration,
    Option,
    Scope,
    Size,
    option_value,
    parse_options,
    read_table,
    readme_sections,
    section,
    update_sections,
    write_table,
)

SCOPES = (Scope.BATCH_READ, Scope.STREAM_READ, Scope.WRITE)


def a_scope(option: Option) -> Scope:
    return next(s for s in SCOPES if option.applies & s)


def parse_one(option: Option, raw: str) -> Any:
    scope = a_scope(option)
    base = {"stream": "S"} if scope != Scope.WRITE else {}
    return parse_options({**base, option.name: raw}, scope)[option.name]


def test_names_are_unique_within_each_scope() -> None:
    for scope in SCOPES:
        names = [o.key for o in OPTIONS if o.applies & scope]
        assert len(names) == len(set(names)), scope


def test_every_default_is_valid_and_documented() -> None:
    for option in OPTIONS:
        assert option.help.endswith("."), option.name
        value = option.default_value()
        if option.default is None:
            assert value == option.kind.absent
        else:
            assert value is not None and option.shown_default == option.default


@pytest.mark.parametrize("option", [o for o in OPTIONS if isinstance(o.kind, Duration)], ids=lambda o: o.name)
def test_every_duration_option_reads_one_grammar(option: Option) -> None:
    ns = {raw: parse_one(option, raw) for raw in ("1h30m", "90m", "5400", "5400s", "1.5H", "5400000ms")}
    assert set(ns.values()) == {5400 * 10**9}, ns
    with pytest.raises(OptionError, match=f"option {option.name}: expected "):
        parse_one(option, "soon")


@pytest.mark.parametrize("option", [o for o in OPTIONS if isinstance(o.kind, Size)], ids=lambda o: o.name)
def test_every_size_option_reads_one_grammar(option: Option) -> None:
    assert parse_one(option, "64k") == parse_one(option, "65536") == parse_one(option, "64KiB") == 65536


@pytest.mark.parametrize("option", [o for o in OPTIONS if isinstance(o.kind, (Count, Bool))], ids=lambda o: o.name)
def test_every_count_and_boolean_option_reads_one_grammar(option: Option) -> None:
    if isinstance(option.kind, Bool):
        assert parse_one(option, " YES ") is True and parse_one(option, "0") is False
    else:
        assert parse_one(option, " 7 ") == 7
        with pytest.raises(OptionError, match=f"option {option.name}: expected an integer, got '7.5'"):
            parse_one(option, "7.5")


def test_scopes_and_ignored_names() -> None:
    assert Scope.READ.describe() == "reads" and Scope.ALL.describe() == "reads and writes"
    assert Scope.BATCH_READ.describe() == "batch reads" and Scope.WRITE.describe() == "writes"
    parse_options(dict.fromkeys(SPARK_WRITE_OPTIONS, "x"), Scope.WRITE, ignored=SPARK_WRITE_OPTIONS)
    with pytest.raises(OptionError, match="unknown option 'path' for reading from jetstream"):
        parse_options({"stream": "S", "path": "p"}, Scope.BATCH_READ)
    with pytest.raises(OptionError, match="option durable applies only to streaming reads, not writes"):
        parse_options({"durable": "d"}, Scope.WRITE)


def test_given_records_what_was_set() -> None:
    parsed = parse_options({"stream": "S", "minPartitions": "3", "failOnDataLoss": ""}, Scope.BATCH_READ)
    assert parsed.given == {"stream", "minPartitions"}
    assert parsed["failOnDataLoss"] is True and parsed["endingOffsets"] == "latest"


def test_option_value_reads_one_option_only() -> None:
    assert option_value({"INCLUDEHEADERS": "false", "anything": "else"}, "includeHeaders", Scope.READ) is False
    assert option_value({}, "includeHeaders", Scope.READ) is True


def test_tables_list_every_option_once_in_table_order() -> None:
    read_rows = [line.split("|")[1].strip(" `") for line in read_table().splitlines()[2:]]
    assert read_rows == [o.name for o in OPTIONS if o.applies & Scope.READ]
    write_rows = [line.split("|")[1].strip(" `") for line in write_table().splitlines()[2:]]
    assert write_rows == [o.name for o in OPTIONS if o.applies == Scope.WRITE]
    assert "| `maxTriggerDelay` | 15m | streaming |" in read_table()
    assert "| `endingOffsets` | latest | batch |" in read_table()
    assert "| `connectTimeout` | 10 | both |" in read_table()


def test_update_sections_replaces_only_between_markers() -> None:
    names = list(readme_sections())
    text = "intro\n" + "".join(
        f"<!-- BEGIN GENERATED {n} (note) -->\nstale\n<!-- END GENERATED {n} -->\nbetween\n" for n in names
    )
    updated = update_sections(text)
    assert updated.startswith("intro\n") and updated.count("between\n") == len(names)
    assert "stale" not in updated
    for name, body in readme_sections().items():
        assert section(updated, name) == body
    assert update_sections(updated) == updated
    with pytest.raises(ValueError, match="no generated section 'option-grammar'"):
        update_sections("no markers")
