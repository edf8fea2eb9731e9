"""Subject transforms (jetstream/transform.py): nats-server's mapping functions and errors.

The expected subjects are the ones nats-server's own subject_transform_test.go
states; the integration tests compare whole mappings with the real server.
"""

from __future__ import annotations

import pytest

from jetstream_server.jetstream.transform import (
    SubjectTransform,
    TransformError,
    fnv1a32,
    validate_mapping,
)


def test_fnv1a32_reference_vectors() -> None:
    # the published FNV-1a 32 test vectors
    assert fnv1a32(b"") == 0x811C9DC5
    assert fnv1a32(b"a") == 0xE40C292C
    assert fnv1a32(b"foobar") == 0xBF9CF968


@pytest.mark.parametrize(
    ("src", "dest", "subject", "expected"),
    [
        ("foo.*.*", "bar.$2.$1", "foo.A.B", "bar.B.A"),
        ("foo.*.*", "bar.{{wildcard(2)}}.{{Wildcard(1)}}", "foo.A.B", "bar.B.A"),
        ("*", "{{splitfromleft(1,3)}}", "12345", "123.45"),
        ("*", "{{SplitFromRight(1,3)}}", "12345", "12.345"),
        ("*", "{{SliceFromLeft(1,3)}}", "1234567890", "123.456.789.0"),
        ("*", "{{SliceFromRight(1,3)}}", "1234567890", "1.234.567.890"),
        ("*", "{{split(1,-)}}", "-abc-def--ghi-", "abc.def.ghi"),
        ("*", "{{splitFromLeft(1,9)}}", "short", "short"),
        ("*", "{{left(1,2)}}.{{right(1,2)}}", "abcdef", "ab.ef"),
        ("foo.>", "bar.>", "foo.a.b.c", "bar.a.b.c"),
        (">", "p.>", "a.b", "p.a.b"),
        ("foo", "bar", "foo", "bar"),
        ("foo.*", "x.{{partition(0,1)}}", "foo.a", "x.0"),
    ],
)
def test_mapping(src: str, dest: str, subject: str, expected: str) -> None:
    assert SubjectTransform(src, dest).match(subject) == expected


def test_partition_is_stable_and_in_range() -> None:
    tr = SubjectTransform("orders.*", "p.{{partition(5,1)}}")
    seen = {tr.match(f"orders.{i}") for i in range(200)}
    assert seen == {f"p.{n}" for n in range(5)}
    assert tr.match("orders.17") == tr.match("orders.17")
    # the key is the token itself: bucket = FNV-1a 32 of its bytes modulo the count
    assert tr.match("orders.17") == f"p.{fnv1a32(b'17') % 5}"


def test_no_match_and_not_literal() -> None:
    tr = SubjectTransform("foo.*", "bar.$1")
    assert tr.match("baz.a") is None
    assert tr.match("foo.*") is None
    assert tr.match("foo.a.b") is None


@pytest.mark.parametrize(
    ("src", "dest", "message"),
    [
        ("foo.*", "bar.$2", "invalid mapping destination: wildcard index out of range in $2: [2]"),
        ("foo", "bar.$1", "invalid mapping destination: wildcard index out of range in $1"),
        ("foo.*", "{{wildcard()}}", "invalid mapping destination: not enough arguments passed to the function "
                                    "in {{wildcard()}}"),
        ("foo.*", "{{wildcard(1,2)}}", "invalid mapping destination: too many arguments passed to the function "
                                       "in {{wildcard(1,2)}}"),
        ("foo.*", "{{split(1,a b)}}", "invalid mapping destination: function argument is invalid or in the wrong "
                                    "format in {{split(1,a b)}}"),
        ("foo.*", "{{partition(x)}}", "invalid mapping destination: function argument is invalid or in the wrong "
                                      "format in {{partition(x)}}"),
        ("foo.*", "{{bogus(1)}}", "invalid mapping destination: unknown function in {{bogus(1)}}"),
        ("foo.*", "bar.*", "invalid subject"),
        ("foo.>", "bar", "invalid subject"),
        ("foo.*", "a..b", "invalid mapping destination: invalid transform"),
    ],
)
def test_errors(src: str, dest: str, message: str) -> None:
    with pytest.raises(TransformError) as caught:
        validate_mapping(src, dest)
    assert str(caught.value) == message
