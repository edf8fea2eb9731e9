"""A reference model of nats-server's permission rules, as they are documented.

Written independently of `jetstream_server.core.permissions` (regular
expressions instead of token walks) so that the two can check each other:
the unit tests compare them on random lists and subjects, and an integration
test compares the model with what both servers answer.

Rules:
- a filter token ``*`` matches exactly one token, a final ``>`` one or more;
  a subscription subject is matched with its own tokens taken literally
  (``foo.*`` is allowed by ``foo.*`` or ``foo.>``, not by ``foo.bar``);
- publish: allowed when there is no allow list or one allow filter matches,
  and no deny filter matches (deny wins);
- subscribe: a ``"<subject> <queue>"`` entry concerns queue subscriptions
  only. Plain subscription: some plain allow entry must match (when there
  are allow entries at all), no plain deny entry may match. Queue
  subscription: as plain, except that when allow entries with a queue match
  the subject, the decision is whether the queue is one of them (equal, or
  inside a wildcard queue pattern), and a matching deny entry with a queue
  denies only when the queue is one of its queues.
"""

from __future__ import annotations

import re


def _regex(filter_subject: str) -> re.Pattern[str]:
    parts = []
    tokens = filter_subject.split(".")
    for i, token in enumerate(tokens):
        if token == ">" and i == len(tokens) - 1:
            parts.append(r"[^.]+(?:\.[^.]+)*")
        elif token == "*":
            parts.append(r"[^.]+")
        else:
            parts.append(re.escape(token))
    return re.compile(r"\.".join(parts))


def matches(filter_subject: str, subject: str) -> bool:
    return _regex(filter_subject).fullmatch(subject) is not None


def _queue_in(queue: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if queue == pattern:
            return True
        if "*" in pattern.split(".") or ">" in pattern.split("."):
            # a literal queue name inside a wildcard queue pattern
            if "*" not in queue.split(".") and ">" not in queue.split(".") and matches(pattern, queue):
                return True
    return False


def model_publish_allowed(
    allow: tuple[str, ...] | None, deny: tuple[str, ...], subject: str
) -> bool:
    if allow is not None and not any(matches(a, subject) for a in allow):
        return False
    return not any(matches(d, subject) for d in deny)


def _split(entries: tuple[str, ...]) -> tuple[list[str], list[tuple[str, str]]]:
    plain: list[str] = []
    queued: list[tuple[str, str]] = []
    for entry in entries:
        parts = entry.split()
        if len(parts) == 2:
            queued.append((parts[0], parts[1]))
        else:
            plain.append(entry)
    return plain, queued


def model_subscribe_allowed(
    allow: tuple[str, ...], deny: tuple[str, ...], subject: str, queue: str | None
) -> bool:
    allow_plain, allow_queued = _split(allow)
    deny_plain, deny_queued = _split(deny)
    ok = True
    if allow:
        ok = any(matches(a, subject) for a in allow_plain)
        if queue:
            groups = [q for s, q in allow_queued if matches(s, subject)]
            if groups:
                ok = _queue_in(queue, groups)
    if not ok:
        return False
    if any(matches(d, subject) for d in deny_plain):
        return False
    if queue:
        groups = [q for s, q in deny_queued if matches(s, subject)]
        if groups and _queue_in(queue, groups):
            return False
    return True
