"""arrow_rows.headers_column: the bulk (Arrow kernels) header parse equals the per-message one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_jetstream.client import NatsError
from spark_jetstream.read import arrow_rows
from spark_jetstream.read.arrow_rows import HEADERS_TYPE, headers_column, headers_value

UNIQUE = [
    b"NATS/1.0\r\nNats-Msg-Id: a-1\r\n\r\n",
    b"",
    b"NATS/1.0\r\n\r\n",
    b"NATS/1.0\r\n  Name :  v1 \r\nOther:\r\nnocolon\r\nK: x:y\r\n\r\n",
    b"NATS/1.0\r\n\xc3\xa9t\xc3\xa9: \xc3\xa0\r\n\r\n",
]


def _expected(blocks: list[bytes]) -> list[object]:
    return [headers_value(b) for b in blocks]


def test_bulk_path_matches_per_message_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(blocks: list[bytes]) -> None:
        raise AssertionError("per-message path taken")

    monkeypatch.setattr(arrow_rows, "_headers_per_message", refuse)
    col = headers_column(UNIQUE)
    assert col.type == HEADERS_TYPE
    assert col.to_pylist() == _expected(UNIQUE)
    assert col.to_pylist()[1] is None and col.to_pylist()[2] is None
    assert col.to_pylist()[3] == [("Name", ["v1"]), ("Other", [""]), ("K", ["x:y"])]


def test_repeated_names_keep_every_value_in_order() -> None:
    blocks = [b"NATS/1.0\r\nA: 1\r\nB: 2\r\nA: 3\r\n\r\n", *UNIQUE]
    col = headers_column(blocks)
    assert col.to_pylist()[0] == [("A", ["1", "3"]), ("B", ["2"])]
    assert col.to_pylist() == _expected(blocks)


def test_no_headers_at_all_is_a_null_column() -> None:
    col = headers_column([b"", b""])
    assert col.null_count == 2 and col.type == HEADERS_TYPE


def test_not_utf8_is_decoded_with_replacement() -> None:
    blocks = [b"NATS/1.0\r\nA: \xff\r\n\r\n", *UNIQUE]
    assert headers_column(blocks).to_pylist() == _expected(blocks)


def test_bad_status_line_raises() -> None:
    with pytest.raises(NatsError, match="bad header block"):
        headers_column([b"NATS/1.0\r\nA: 1\r\n\r\n", b"HTTP/1.1\r\nA: 1\r\n\r\n"])


_NAME = st.text(alphabet="AbZ-_ x:é", min_size=0, max_size=6)
_VALUE = st.text(alphabet="ab :é\t", min_size=0, max_size=6)
_STATUS = st.sampled_from(["NATS/1.0", "NATS/1.0 503", "NATS/1.0 408 Request: Timeout", "NATS/1.0 100 x:y"])


@st.composite
def header_blocks(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):
        return b""
    lines = draw(st.lists(st.tuples(_NAME, _VALUE, st.booleans()), max_size=4))
    text = draw(_STATUS) + "\r\n"
    for name, value, with_colon in lines:
        text += f"{name}: {value}\r\n" if with_colon else f"{name}{value}\r\n"
    return (text + "\r\n").encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(header_blocks(), min_size=1, max_size=12))
def test_bulk_parse_equals_the_per_message_parse_on_any_blocks(blocks: list[bytes]) -> None:
    """Status lines with colons, lines without one, blank names, repeated names, whitespace."""
    assert headers_column(blocks).to_pylist() == _expected(blocks)


ONE_LINE = [
    b"NATS/1.0\r\nNats-Msg-Id: a-1\r\n\r\n",
    b"",
    b"NATS/1.0\r\nNats-Msg-Id:b-2\r\n\r\n",
    b"NATS/1.0\r\n Url : http://x:8080/y \r\n\r\n",  # colons in the value: the first one cuts
    b"NATS/1.0\r\n\xc3\xa9t\xc3\xa9: \xc3\xa0\r\n\r\n",
]


def test_blocks_of_one_line_each_take_no_string_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: object) -> None:
        raise AssertionError("string kernels used")

    monkeypatch.setattr(arrow_rows, "_any_lines", refuse)
    col = headers_column(ONE_LINE)
    assert col.to_pylist() == _expected(ONE_LINE)
    assert col.to_pylist()[3] == [("Url", ["http://x:8080/y"])]


@pytest.mark.parametrize(
    "odd",
    [
        b"NATS/1.0\r\nno colon\r\n\r\n",  # not a header: the map is null
        b"NATS/1.0\r\nA: 1\r\nB: 2\r\n\r\n",  # two lines
        b"NATS/1.0\r\n\r\n",  # no line
        b"NATS/1.0\r\nA: 1\r\nB: 2\r\n",  # no blank line: B is a header all the same
        b"NATS/1.0 503\r\nA: 1\r\n\r\n",  # a status code
        b"NATS/1.0\r\nA: x\ry\nz\r\n\r\n",  # a lone CR and LF inside the value
        b"NATS/1.0\r\nA: 1\r\n\r\nB: 2\r\n\r\n",  # a line after a blank one
    ],
)
def test_a_block_that_is_not_one_line_gives_the_per_message_result(odd: bytes) -> None:
    blocks = [*ONE_LINE, odd, *ONE_LINE]
    assert headers_column(blocks).to_pylist() == _expected(blocks)


_ONE_LINE_TEXT = st.text(alphabet="Ab :é\t\r\n", min_size=0, max_size=6)


@st.composite
def one_line_blocks(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 4)) == 0:
        return b""
    name, value = draw(_ONE_LINE_TEXT), draw(_ONE_LINE_TEXT)
    return f"NATS/1.0\r\n{name}:{value}\r\n\r\n".encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(one_line_blocks(), min_size=1, max_size=12))
def test_one_line_blocks_parse_as_the_per_message_parse(blocks: list[bytes]) -> None:
    """Mostly one `Name: value` line a block; CRs, LFs and colons inside make some blocks
    anything else, which must give the same result by the general path."""
    assert headers_column(blocks).to_pylist() == _expected(blocks)
