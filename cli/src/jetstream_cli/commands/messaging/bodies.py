"""What `pub` and `req` send: bodies from the argument or from stdin (whole, or a message a
line with `--send-on newline`), run through natscli's templates; a template that does not
parse is sent as written, after natscli's log line saying so."""

from __future__ import annotations

import sys

from ...session import log
from ...templates import TemplateError, expand


def templated(text: str, count: int, what: str, enabled: bool) -> str:
    if not enabled:
        return text
    try:
        return expand(text, count)
    except TemplateError as exc:
        log(f"Could not parse {what} template: {exc}")
        return text


def read_stdin(send_on: str) -> list[str]:
    log("Reading payload from STDIN")
    data = sys.stdin.read()
    if send_on == "eof":
        return [data]
    return data.splitlines()
