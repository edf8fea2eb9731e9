"""The body/subject/header templates of `pub`, `req` and `reply`, as natscli supports them.

natscli runs bodies through Go's text/template with these functions and fields:
`Count`/`Cnt` (the message number, from 1), `Unix`, `UnixNano`, `TimeStamp` (RFC 3339),
`Time` (3:04PM), `ID` (a unique id), `Random min max` (random letters) and, for `reply`,
`Request` (the request body). Both `{{ .Count }}` and `{{ Count }}` work, as do the trim
markers `{{-` and `-}}`. An action that is none of these raises `TemplateError`; natscli
then logs the error and sends the text unchanged, and so do the commands here.
"""

from __future__ import annotations

import random
import re
import string
import time
from datetime import datetime

from nats.nuid import NUID

_ACTION = re.compile(r"(\s*)\{\{(-\s)?\s*(.*?)\s*(\s-)?\}\}(\s*)", re.DOTALL)
_NUID = NUID()


class TemplateError(ValueError):
    pass


def _random_string(shortest: int, longest: int) -> str:
    low, high = sorted((shortest, longest))
    length = random.randint(low, high)
    return "".join(random.choice(string.ascii_letters) for _ in range(length))


def expand(text: str, count: int, request: str | None = None) -> str:
    """`text` with every `{{ ... }}` action replaced; `TemplateError` on an unknown one."""
    if "{{" not in text:
        return text
    now = time.time_ns()
    moment = datetime.fromtimestamp(now / 1e9).astimezone()

    def value(action: str) -> str:
        parts = action.split()
        if not parts:
            raise TemplateError("missing value for command")
        name = parts[0].lstrip(".")
        args = parts[1:]
        if name in ("Count", "Cnt"):
            result = str(count)
        elif name == "Unix":
            result = str(now // 1_000_000_000)
        elif name == "UnixNano":
            result = str(now)
        elif name == "TimeStamp":
            result = moment.isoformat(timespec="seconds")
        elif name == "Time":
            result = moment.strftime("%I:%M%p").lstrip("0")
        elif name == "ID":
            result = _NUID.next().decode()
        elif name == "Request" and request is not None:
            result = request
        elif name == "Random" and not parts[0].startswith("."):
            if len(args) != 2 or not all(a.isdigit() for a in args):
                raise TemplateError("Random needs two numbers: {{ Random 10 100 }}")
            return _random_string(int(args[0]), int(args[1]))
        else:
            raise TemplateError(f'function "{name}" not defined')
        if args:
            raise TemplateError(f"{name} takes no arguments")
        return result

    def replace(match: re.Match[str]) -> str:
        lead, trim_left, action, trim_right, tail = match.groups()
        return ("" if trim_left else lead) + value(action) + ("" if trim_right else tail)

    return _ACTION.sub(replace, text)
