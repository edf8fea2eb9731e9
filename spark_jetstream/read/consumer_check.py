"""Whether an operator's consumer can give exactly-once reads (option `consumer`), from its info.

`check_consumer(info, stream, consumer, subjects)` reads `CONSUMER.INFO`'s
config and either refuses the consumer with `ConsumerRefusedError`, naming the
setting and what it must be, or returns the `ConsumerSettings` the driver works
with and the warnings to log once. Pure: no I/O.

Refused (each breaks exactly-once or cannot be read by the driver's pulls):
- a push consumer (`deliver_subject`): the driver pulls;
- an ephemeral consumer (no `durable_name`): what a crashed run left pending
  must still be there when the query restarts;
- ack policy `none` (nothing is held until a batch commits) or `flow_control`
  (acks come from the flow control answers, not from commits);
- `max_deliver` other than -1: a replay after a crash needs every pending
  message redelivered, however often;
- `headers_only`: the rows need the payloads;
- priority groups (`priority_policy`, `priority_groups`): the driver's pulls
  name no group;
- a filter that differs from option `subjects` (when that is given).
Warned about: `replay_policy: original` (delivers at the original pace: slow),
`inactive_threshold` on a durable (the server deletes it after that long idle,
with what it held pending), a paused consumer.

Settings: the filter (recorded in each offset: a query refuses a consumer
whose filter changed since its checkpoint was written, see
`refuse_changed_filter`); ack `all` or `explicit`; the longest redelivery wait (`ack_wait`, or
the largest `backoff` step: a restart waits that long at most for what a
crashed run left pending); `max_ack_pending` (0: no limit), and the pull
request limits `max_batch`, `max_bytes`, `max_expires`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from spark_jetstream.read.durable import consumer_filters

__all__ = [
    "DEFAULT_ACK_WAIT_S",
    "ConsumerRefusedError",
    "ConsumerSettings",
    "check_consumer",
    "refuse_changed_filter",
]

NS: Final = 1_000_000_000
DEFAULT_ACK_WAIT_S: Final = 30.0  # nats-server's default ack_wait


class ConsumerRefusedError(ValueError):
    """The consumer named by option `consumer` is missing or cannot give exactly-once reads."""


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    """What the driver needs to know of the consumer's configuration."""

    ack_all: bool
    ack_wait_s: float
    redelivery_wait_s: float  # the longest a pending message waits before it is delivered again
    max_ack_pending: int = 0  # 0: no limit
    max_request_batch: int = 0  # 0: no limit
    max_request_bytes: int = 0
    max_request_expires_s: float = 0.0
    filters: tuple[str, ...] = ()  # filter subjects, sorted; () for all of the stream's subjects


def _seconds(ns: Any) -> float:
    return float(ns or 0) / NS


def check_consumer(
    info: Mapping[str, Any], stream: str, consumer: str, subjects: tuple[str, ...]
) -> tuple[ConsumerSettings, list[str]]:
    """The consumer's settings and warnings; raise `ConsumerRefusedError` naming a setting that
    breaks exactly-once."""
    config: Mapping[str, Any] = info.get("config") or {}
    where = f"consumer {consumer!r} on stream {stream!r} (option consumer)"

    def refuse(setting: str, why: str) -> ConsumerRefusedError:
        return ConsumerRefusedError(
            f"{where} has {setting}: {why}; the connector never changes a consumer: ask its operator "
            "for a durable pull consumer as docs/permissions.md describes"
        )

    if config.get("deliver_subject"):
        raise refuse(f"deliver_subject {config['deliver_subject']!r} (a push consumer)",
                     "the connector pulls: it needs a pull consumer (no deliver_subject)")
    if not config.get("durable_name"):
        raise refuse("no durable_name (an ephemeral consumer)",
                     "a restarted query needs what a crashed run left pending: the consumer must be durable")
    ack_policy = str(config.get("ack_policy", "none"))
    if ack_policy not in ("explicit", "all"):
        raise refuse(f"ack_policy {ack_policy!r}",
                     "a micro-batch is acknowledged once it commits: ack_policy must be explicit or all")
    max_deliver = int(config.get("max_deliver", -1) or -1)
    if max_deliver != -1:
        raise refuse(f"max_deliver {max_deliver}",
                     "a replay after a crash needs every pending message delivered again, however often: "
                     "max_deliver must be -1 (unlimited)")
    if config.get("headers_only"):
        raise refuse("headers_only true", "the rows need the payloads: headers_only must be false")
    if config.get("priority_groups") or str(config.get("priority_policy", "none") or "none") != "none":
        raise refuse(f"priority_policy {config.get('priority_policy')!r} and priority_groups "
                     f"{config.get('priority_groups')!r}",
                     "the query must be the consumer's only reader: no priority groups")
    have = consumer_filters(dict(config))
    want = tuple(sorted(s for s in subjects if s != ">"))
    if subjects and have != want:
        raise refuse(f"filter {list(have) or 'all subjects'} (filter_subject / filter_subjects)",
                     f"option subjects asks for {list(want) or 'all subjects'}: leave option subjects out "
                     "(the consumer's filter decides) or give the same subjects")

    warnings: list[str] = []
    if config.get("replay_policy") == "original":
        warnings.append(f"{where} has replay_policy 'original': it delivers at the pace the messages were "
                        "stored, which slows every micro-batch down ('instant' does not)")
    if config.get("inactive_threshold"):
        warnings.append(f"{where} has inactive_threshold {_seconds(config['inactive_threshold']):g}s: the "
                        "server deletes it after that long without activity (a stopped query), with what "
                        "it held pending")
    if info.get("paused"):
        warnings.append(f"{where} is paused (until {config.get('pause_until')}): it delivers nothing until then")

    ack_wait_s = _seconds(config.get("ack_wait")) or DEFAULT_ACK_WAIT_S
    backoff = [_seconds(b) for b in config.get("backoff") or ()]
    max_ack_pending = int(config.get("max_ack_pending", 0) or 0)
    return ConsumerSettings(
        ack_all=ack_policy == "all",
        ack_wait_s=ack_wait_s,
        redelivery_wait_s=max([ack_wait_s, *backoff]),
        max_ack_pending=max(0, max_ack_pending),
        max_request_batch=max(0, int(config.get("max_batch", 0) or 0)),
        max_request_bytes=max(0, int(config.get("max_bytes", 0) or 0)),
        max_request_expires_s=_seconds(config.get("max_expires")),
        filters=have,
    ), warnings


def refuse_changed_filter(stream: str, consumer: str, recorded: tuple[str, ...] | None, now: tuple[str, ...],
                          when: str) -> None:
    """`ConsumerRefusedError` when the consumer's filter is not the `recorded` one (None: nothing
    recorded, nothing to compare): the query's offsets count the messages of one filter, and
    another filter changes which messages a replayed or a later batch holds."""
    if recorded is None or tuple(recorded) == tuple(now):
        return
    def shown(filters: tuple[str, ...]) -> str:
        return str(list(filters)) if filters else "all subjects"
    raise ConsumerRefusedError(
        f"consumer {consumer!r} on stream {stream!r} (option consumer) has filter {shown(now)} "
        f"(filter_subject / filter_subjects), but {when} it was {shown(recorded)}: the query's offsets "
        "hold what one filter delivers, and exactly-once needs that filter on every run; ask its "
        "operator to restore the filter, or read the new one with a new checkpoint location"
    )
