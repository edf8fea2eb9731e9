"""What the connected user may ask: publish permissions from `$SYS.REQ.USER.INFO`.

nats-server answers `$SYS.REQ.USER.INFO` for every user with its account and
permissions; a request the user may not publish is dropped by the server with an
asynchronous `-ERR` and would only end in a time-out here, so the collector asks
`may(subject)` first. A server that does not answer (the bundled server has no `$SYS`
requests) leaves everything allowed: a refused request then costs one time-out, and
the collector reports it.

Matching follows NATS subjects: tokens split on `.`, `*` matches one token, `>` the
rest (one or more); allow (if given) must match, deny must not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def subject_matches(pattern: str, subject: str) -> bool:
    """Whether the literal `subject` is matched by `pattern` (with `*` and `>`)."""
    want = pattern.split(".")
    have = subject.split(".")
    for i, token in enumerate(want):
        if token == ">":
            return len(have) > i
        if i >= len(have) or (token != "*" and token != have[i]):
            return False
    return len(want) == len(have)


@dataclass(frozen=True, slots=True)
class Access:
    """The user's identity and publish permissions (None: no list, nothing restricted)."""

    user: str | None = None
    account: str | None = None
    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = field(default=())
    known: bool = False  # the server told us (else everything is tried)

    @classmethod
    def from_user_info(cls, data: Mapping[str, Any]) -> Access:
        publish = (data.get("permissions") or {}).get("publish") or {}
        allow = publish.get("allow")
        return cls(
            user=data.get("user") or None,
            account=data.get("account") or None,
            allow=None if allow is None else _strings(allow),
            deny=_strings(publish.get("deny") or ()),
            known=True,
        )

    def may(self, subject: str) -> bool:
        if self.allow is not None and not any(subject_matches(p, subject) for p in self.allow):
            return False
        return not any(subject_matches(p, subject) for p in self.deny)


def _strings(values: Sequence[Any]) -> tuple[str, ...]:
    return tuple(str(v) for v in values)
