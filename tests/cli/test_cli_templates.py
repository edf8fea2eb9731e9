"""jetstream_cli.templates: natscli's body templates for pub, req and reply."""

from __future__ import annotations

import re

import pytest

from jetstream_cli.templates import TemplateError, expand


@pytest.mark.parametrize("text", ["{{.Count}}", "{{ .Count }}", "{{Count}}", "{{ Count }}",
                                  "{{.Cnt}}", "{{ Cnt }}"])
def test_count_forms(text: str) -> None:
    assert expand(f"Order #{text}", 7) == "Order #7"


def test_plain_text_unchanged() -> None:
    assert expand("Order #1001", 3) == "Order #1001"
    assert expand("{ not a template }", 3) == "{ not a template }"


def test_functions() -> None:
    assert re.fullmatch(r"[A-Za-z]{10,20}", expand("{{ Random 10 20 }}", 1))
    assert expand("{{ID}}", 1) != expand("{{ID}}", 1)
    assert expand("{{Unix}}", 1).isdigit()
    assert expand("{{UnixNano}}", 1).isdigit()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", expand("{{TimeStamp}}", 1))
    assert re.fullmatch(r"\d{1,2}:\d\d(AM|PM)", expand("{{Time}}", 1))


def test_request_only_for_reply() -> None:
    assert expand("got {{.Request}}", 1, request="ping") == "got ping"
    with pytest.raises(TemplateError, match="Request"):
        expand("got {{.Request}}", 1)


def test_trim_markers() -> None:
    assert expand("a  {{- Count -}}  b", 2) == "a2b"


@pytest.mark.parametrize("text", ["{{ Nope }}", "{{ Random 5 }}", "{{ Count 1 }}", "{{ }}"])
def test_errors(text: str) -> None:
    with pytest.raises(TemplateError):
        expand(text, 1)
