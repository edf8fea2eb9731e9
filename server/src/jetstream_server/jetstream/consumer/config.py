"""Consumer configuration: the `config` object of `CONSUMER.CREATE`, as nats-server reads it.

`ConsumerConfig.from_json` checks JSON types (a wrong type is nats-server's
10025 "invalid JSON"), `with_defaults` fills in what nats-server fills in
(`ack_wait` 30 s unless ack none or flow_control, `max_ack_pending` 1000
unless ack none, `max_deliver` -1, `max_waiting` 512 for pull consumers,
ephemeral `inactive_threshold` 5 s, `ack_wait` = first `backoff` value; ack
flow_control: `flow_control` on, `idle_heartbeat` 1 s), `validate` raises the error codes
nats-server raises for contradictory options, and `to_json` writes the config
back the way nats-server reports it (Go `omitempty`: zero values left out,
except the policies, `max_deliver`, `max_waiting` and `num_replicas`).

Invariants: a config is immutable; durations are nanoseconds (`*_ns` fields
hold them, the JSON keys are nats-server's); `filters` is the one list of
subject filters the consumer delivers (empty = everything), whichever of
`filter_subject` / `filter_subjects` set it; the policies are `Literal`
types (`DeliverPolicy`, `AckPolicy`, `ReplayPolicy`, `PriorityPolicy`), so a
misspelt one is a type error. Unknown keys are kept in `extra` and echoed back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypeVar, get_args

from jetstream_server.core.filter_set import BudgetExceeded, first_nested
from jetstream_server.core.gotime import parse_rfc3339_ns, rfc3339_ns
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.settings import ServerLimits
from jetstream_server.jetstream.stream_config import Retention, StreamConfig, stream_consumer_limits
from jetstream_server.jetstream.subject_match import is_valid_subject
from jetstream_server.jetstream.versioning import REQUIRED_LEVEL_KEY, without_dynamic

DEFAULT_ACK_WAIT_NS: Final = 30_000_000_000
DEFAULT_MAX_ACK_PENDING: Final = 1000
DEFAULT_MAX_WAITING: Final = 512
DEFAULT_INACTIVE_THRESHOLD_NS: Final = 5_000_000_000
MIN_HEARTBEAT_NS: Final = 100_000_000
MAX_NAME_LEN: Final = 255

DeliverPolicy = Literal[
    "all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject"
]
# ack policy flow_control (nats-server 2.14, API level 4): a push consumer whose
# flow control answers acknowledge (flow_acks.py); nats-server sets these
AckPolicy = Literal["none", "all", "explicit", "flow_control"]
ReplayPolicy = Literal["instant", "original"]
PriorityPolicy = Literal["none", "overflow", "pinned_client", "prioritized"]
DELIVER_POLICIES: Final[tuple[DeliverPolicy, ...]] = get_args(DeliverPolicy)
ACK_POLICIES: Final[tuple[AckPolicy, ...]] = get_args(AckPolicy)
REPLAY_POLICIES: Final[tuple[ReplayPolicy, ...]] = get_args(ReplayPolicy)
PRIORITY_POLICIES: Final[tuple[PriorityPolicy, ...]] = get_args(PriorityPolicy)
FLOW_CONTROL_HEARTBEAT_NS: Final = 1_000_000_000
DEFAULT_PINNED_TTL_NS: Final = 120_000_000_000  # nats-server's JsDefaultPinnedTTL
_GROUP_NAME: Final = re.compile(r"[a-zA-Z0-9/_=-]{1,16}")


def valid_group_name(group: str) -> bool:
    """nats-server's `validGroupName` for priority groups."""
    return _GROUP_NAME.fullmatch(group) is not None



def format_time(ns: int) -> str:
    """RFC 3339 UTC with nanoseconds, as nats-server prints times (0 is the epoch,
    not Go's zero time: a configured time is always a real one)."""
    return "1970-01-01T00:00:00Z" if ns == 0 else rfc3339_ns(ns)


def parse_time(text: str) -> int:
    """Nanoseconds since the epoch of an RFC 3339 time; ValueError when malformed."""
    return parse_rfc3339_ns(text)


def unmarshal_error(value: object, field: str, go_type: str) -> str:
    """Go's encoding/json message for a value of the wrong type in `field`."""
    kind = (
        "bool" if isinstance(value, bool)
        else "number" if isinstance(value, (int, float))
        else "string" if isinstance(value, str)
        else "array" if isinstance(value, list)
        else "object"
    )
    return f"json: cannot unmarshal {kind} into Go struct field {field} of type {go_type}"


def _invalid(err: str) -> ApiError:
    return ApiError(Err.INVALID_JSON, err=err)


# Go types of the integer fields of nats-server's ConsumerConfig (their ranges)
_DURATIONS = frozenset({"ack_wait", "idle_heartbeat", "max_expires", "inactive_threshold"})
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


def _want_int(raw: dict[str, Any], key: str, *, unsigned: bool = False) -> int:
    value = raw.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            value = int(value)
        else:
            raise _invalid(f"json: cannot unmarshal {type(value).__name__} into field {key}")
    if unsigned and value < 0:
        raise _invalid(f"json: cannot unmarshal number {value} into field {key} of type uint64")
    low, high = (0, _UINT64_MAX) if unsigned else (_INT64_MIN, _INT64_MAX)
    if not low <= value <= high:
        # out of range for Go: nats-server's decoder error, naming the field
        go_type = "uint64" if unsigned else "time.Duration" if key in _DURATIONS else "int"
        raise _invalid(
            f"json: cannot unmarshal number {value} into Go struct field "
            f"CreateConsumerRequest.config.{key} of type {go_type}"
        )
    return int(value)


def _want_str(raw: dict[str, Any], key: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _invalid(f"json: cannot unmarshal {type(value).__name__} into field {key} of type string")
    return value


def _want_bool(raw: dict[str, Any], key: str) -> bool:
    value = raw.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _invalid(f"json: cannot unmarshal {type(value).__name__} into field {key} of type bool")
    return value


_Policy = TypeVar("_Policy", bound=str)


def _want_enum(raw: dict[str, Any], key: str, allowed: tuple[_Policy, ...], default: _Policy) -> _Policy:
    value = raw.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str) or value.lower() not in allowed:
        raise _invalid(f'can not unmarshal "\\"{value}\\""')
    return allowed[allowed.index(value.lower())]


_KNOWN_KEYS: Final = frozenset(
    {
        "durable_name",
        "name",
        "description",
        "deliver_policy",
        "opt_start_seq",
        "opt_start_time",
        "ack_policy",
        "ack_wait",
        "max_deliver",
        "backoff",
        "filter_subject",
        "filter_subjects",
        "replay_policy",
        "rate_limit_bps",
        "sample_freq",
        "max_waiting",
        "max_ack_pending",
        "flow_control",
        "idle_heartbeat",
        "headers_only",
        "max_batch",
        "max_expires",
        "max_bytes",
        "deliver_subject",
        "deliver_group",
        "inactive_threshold",
        "num_replicas",
        "mem_storage",
        "metadata",
        "pause_until",
        "direct",
        "priority_groups",
        "priority_policy",
        "priority_timeout",
    }
)


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    durable_name: str = ""
    name: str = ""
    description: str = ""
    deliver_policy: DeliverPolicy = "all"
    opt_start_seq: int = 0
    opt_start_time_ns: int | None = None  # None: not set (the epoch itself is a valid time)
    ack_policy: AckPolicy = "none"
    ack_wait_ns: int = 0
    max_deliver: int = 0
    backoff_ns: tuple[int, ...] = ()
    filter_subject: str = ""
    filter_subjects: tuple[str, ...] = ()
    replay_policy: ReplayPolicy = "instant"
    rate_limit_bps: int = 0
    sample_freq: str = ""
    max_waiting: int = 0
    max_ack_pending: int = 0
    flow_control: bool = False
    idle_heartbeat_ns: int = 0
    headers_only: bool = False
    max_batch: int = 0
    max_expires_ns: int = 0
    max_bytes: int = 0
    deliver_subject: str = ""
    deliver_group: str = ""
    inactive_threshold_ns: int = 0
    num_replicas: int = 0
    mem_storage: bool = False
    metadata: tuple[tuple[str, str], ...] = ()
    pause_until_ns: int = 0
    priority_groups: tuple[str, ...] = ()
    priority_policy: PriorityPolicy = "none"
    pinned_ttl_ns: int = 0  # JSON `priority_timeout`
    extra: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    # -- derived -------------------------------------------------------------
    @property
    def is_pull(self) -> bool:
        return not self.deliver_subject

    @property
    def is_durable(self) -> bool:
        return bool(self.durable_name)

    @property
    def filters(self) -> tuple[str, ...]:
        if self.filter_subjects:
            return self.filter_subjects
        return (self.filter_subject,) if self.filter_subject else ()

    # -- JSON ----------------------------------------------------------------
    @classmethod
    def from_json(cls, raw: Any) -> ConsumerConfig:
        if not isinstance(raw, dict):
            raise _invalid("json: cannot unmarshal config, expected an object")
        backoff = raw.get("backoff") or []
        if not isinstance(backoff, list) or not all(
            isinstance(b, int) and not isinstance(b, bool) and _INT64_MIN <= b <= _INT64_MAX
            for b in backoff
        ):
            raise _invalid("json: cannot unmarshal backoff, expected a list of durations")
        filter_subjects = raw.get("filter_subjects") or []
        if not isinstance(filter_subjects, list) or not all(
            isinstance(f, str) for f in filter_subjects
        ):
            raise _invalid("json: cannot unmarshal filter_subjects, expected a list of strings")
        metadata = raw.get("metadata") or {}
        if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise _invalid("json: cannot unmarshal metadata, expected an object of strings")
        groups = raw.get("priority_groups") or []
        field_name = "CreateConsumerRequest.config.priority_groups"
        if not isinstance(groups, list):
            raise _invalid(unmarshal_error(groups, field_name, "[]string"))
        for group in groups:
            if not isinstance(group, str):
                raise _invalid(unmarshal_error(group, field_name, "string"))
        policy = raw.get("priority_policy")
        if policy is not None and policy not in PRIORITY_POLICIES:
            raise _invalid(f"unknown priority policy: {json.dumps(policy)}")
        priority_policy = PRIORITY_POLICIES[PRIORITY_POLICIES.index(policy)] if policy else "none"
        start_time = _want_str(raw, "opt_start_time")
        pause_until = _want_str(raw, "pause_until")
        try:
            start_time_ns = (
                parse_time(start_time)
                if start_time and not start_time.startswith("0001-01-01T00:00:00")
                else None
            )
            pause_until_ns = parse_time(pause_until) if pause_until else 0
        except ValueError as exc:
            raise _invalid(str(exc)) from None
        return cls(
            durable_name=_want_str(raw, "durable_name"),
            name=_want_str(raw, "name"),
            description=_want_str(raw, "description"),
            deliver_policy=_want_enum(raw, "deliver_policy", DELIVER_POLICIES, "all"),
            opt_start_seq=_want_int(raw, "opt_start_seq", unsigned=True),
            opt_start_time_ns=start_time_ns,
            ack_policy=_want_enum(raw, "ack_policy", ACK_POLICIES, "none"),
            ack_wait_ns=_want_int(raw, "ack_wait"),
            max_deliver=_want_int(raw, "max_deliver"),
            backoff_ns=tuple(backoff),
            filter_subject=_want_str(raw, "filter_subject"),
            filter_subjects=tuple(filter_subjects),
            replay_policy=_want_enum(raw, "replay_policy", REPLAY_POLICIES, "instant"),
            rate_limit_bps=_want_int(raw, "rate_limit_bps", unsigned=True),
            sample_freq=_want_str(raw, "sample_freq"),
            max_waiting=_want_int(raw, "max_waiting"),
            max_ack_pending=_want_int(raw, "max_ack_pending"),
            flow_control=_want_bool(raw, "flow_control"),
            idle_heartbeat_ns=_want_int(raw, "idle_heartbeat"),
            headers_only=_want_bool(raw, "headers_only"),
            max_batch=_want_int(raw, "max_batch"),
            max_expires_ns=_want_int(raw, "max_expires"),
            max_bytes=_want_int(raw, "max_bytes"),
            deliver_subject=_want_str(raw, "deliver_subject"),
            deliver_group=_want_str(raw, "deliver_group"),
            inactive_threshold_ns=_want_int(raw, "inactive_threshold"),
            num_replicas=_want_int(raw, "num_replicas"),
            mem_storage=_want_bool(raw, "mem_storage"),
            metadata=tuple(sorted(metadata.items())),
            pause_until_ns=pause_until_ns,
            priority_groups=tuple(groups),
            priority_policy=priority_policy,
            pinned_ttl_ns=max(_want_int(raw, "priority_timeout"), 0),
            extra=tuple((k, v) for k, v in raw.items() if k not in _KNOWN_KEYS),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}

        def put(key: str, value: Any) -> None:
            if value:
                out[key] = value

        put("durable_name", self.durable_name)
        put("name", self.name)
        put("description", self.description)
        out["deliver_policy"] = self.deliver_policy
        put("opt_start_seq", self.opt_start_seq)
        if self.opt_start_time_ns is not None:
            out["opt_start_time"] = format_time(self.opt_start_time_ns)
        out["ack_policy"] = self.ack_policy
        put("ack_wait", self.ack_wait_ns)
        out["max_deliver"] = self.max_deliver
        put("backoff", list(self.backoff_ns))
        put("filter_subject", self.filter_subject)
        put("filter_subjects", list(self.filter_subjects))
        out["replay_policy"] = self.replay_policy
        put("rate_limit_bps", self.rate_limit_bps)
        put("sample_freq", self.sample_freq)
        put("max_waiting", self.max_waiting)
        put("max_ack_pending", self.max_ack_pending)
        put("flow_control", self.flow_control)
        put("idle_heartbeat", self.idle_heartbeat_ns)
        put("headers_only", self.headers_only)
        put("max_batch", self.max_batch)
        put("max_expires", self.max_expires_ns)
        put("max_bytes", self.max_bytes)
        put("deliver_subject", self.deliver_subject)
        put("deliver_group", self.deliver_group)
        put("inactive_threshold", self.inactive_threshold_ns)
        out["num_replicas"] = self.num_replicas
        put("mem_storage", self.mem_storage)
        put("metadata", dict(self.metadata))
        if self.pause_until_ns:
            out["pause_until"] = format_time(self.pause_until_ns)
        put("priority_groups", list(self.priority_groups))
        if self.priority_policy != "none":
            out["priority_policy"] = self.priority_policy
        put("priority_timeout", self.pinned_ttl_ns)
        for key, value in self.extra:
            out.setdefault(key, value)
        return out

    # -- defaults and checks -------------------------------------------------
    def with_limit_defaults(
        self, stream_config: StreamConfig, limits: ServerLimits
    ) -> ConsumerConfig:
        """Fields left 0 that limits fill in before the usual defaults, as
        nats-server: the stream's `consumer_limits` give `max_ack_pending` and
        `inactive_threshold`; the server's `max_ack_pending` caps the default
        of 1000; a pull consumer gets the server's `max_request_batch`."""
        changes: dict[str, Any] = {}
        stream_max_ack, stream_inactive = stream_consumer_limits(stream_config)
        max_ack = self.max_ack_pending or stream_max_ack
        if max_ack == 0 and self.ack_policy != "none":
            max_ack = DEFAULT_MAX_ACK_PENDING
            if 0 < limits.max_ack_pending < max_ack:
                max_ack = limits.max_ack_pending
        if max_ack != self.max_ack_pending:
            changes["max_ack_pending"] = max_ack
        if self.inactive_threshold_ns == 0 and stream_inactive > 0:
            changes["inactive_threshold_ns"] = stream_inactive
        if self.is_pull and self.max_batch == 0 and limits.max_request_batch > 0:
            changes["max_batch"] = limits.max_request_batch
        return replace(self, **changes) if changes else self

    def with_defaults(self) -> ConsumerConfig:
        """The config nats-server would store for this request."""
        changes: dict[str, Any] = {}
        if self.durable_name and not self.name:
            changes["name"] = self.durable_name
        if self.max_deliver <= 0:
            changes["max_deliver"] = -1
        if self.ack_policy != "none":
            if self.ack_wait_ns == 0 and self.ack_policy != "flow_control":
                changes["ack_wait_ns"] = DEFAULT_ACK_WAIT_NS
            if self.max_ack_pending == 0:
                changes["max_ack_pending"] = DEFAULT_MAX_ACK_PENDING
        if self.backoff_ns:
            # nats-server: a backoff overrides ack_wait with its first value
            changes["ack_wait_ns"] = self.backoff_ns[0]
        if self.is_pull and self.max_waiting <= 0:
            changes["max_waiting"] = DEFAULT_MAX_WAITING
        if not self.durable_name and self.inactive_threshold_ns == 0:
            changes["inactive_threshold_ns"] = DEFAULT_INACTIVE_THRESHOLD_NS
        if self.priority_policy == "pinned_client" and self.pinned_ttl_ns == 0:
            changes["pinned_ttl_ns"] = DEFAULT_PINNED_TTL_NS
        if self.ack_policy == "flow_control":
            # nats-server (not in pedantic mode): flow control on, heartbeats every second
            changes["flow_control"] = True
            changes["idle_heartbeat_ns"] = FLOW_CONTROL_HEARTBEAT_NS
        # nats-server's static metadata: the API level the features need
        metadata = without_dynamic(dict(self.metadata))
        metadata[REQUIRED_LEVEL_KEY] = str(self.required_api_level())
        changes["metadata"] = tuple(sorted(metadata.items()))
        return replace(self, **changes)

    def required_api_level(self) -> int:
        """The JetStream API level (ADR-44) the features of this config need."""
        if self.ack_policy == "flow_control":
            return 4
        if self.pause_until_ns or self.priority_policy != "none" or self.pinned_ttl_ns or (
            self.priority_groups
        ):
            return 1
        return 0

    def validate(self, stream_retention: Retention = "limits") -> None:
        """Raise the ApiError nats-server raises for this (defaulted) config."""
        policy = self.deliver_policy
        if policy == "by_start_sequence":
            if self.opt_start_seq == 0:
                raise ApiError(
                    Err.CONSUMER_INVALID_POLICY,
                    err="consumer delivery policy is deliver by start sequence, "
                    "but optional start sequence is not set",
                )
            if self.opt_start_time_ns is not None:
                raise ApiError(
                    Err.CONSUMER_INVALID_POLICY,
                    err="consumer delivery policy is deliver by start sequence, "
                    "but optional start time is also set",
                )
        elif policy == "by_start_time":
            if self.opt_start_time_ns is None:
                raise ApiError(
                    Err.CONSUMER_INVALID_POLICY,
                    err="consumer delivery policy is deliver by start time, "
                    "but optional start time is not set",
                )
            if self.opt_start_seq:
                raise ApiError(
                    Err.CONSUMER_INVALID_POLICY,
                    err="consumer delivery policy is deliver by start time, "
                    "but optional start sequence is also set",
                )
        else:
            if policy == "last_per_subject" and not self.filters:
                raise ApiError(
                    Err.CONSUMER_INVALID_POLICY,
                    err="consumer delivery policy is deliver last per subject, "
                    "but optional filter subject is not set",
                )
            label = {
                "all": "deliver all",
                "last": "deliver last",
                "new": "deliver new",
                "last_per_subject": "deliver last per subject",
            }[policy]
            if self.opt_start_seq:
                raise ApiError(
                    Err.CONSUMER_INVALID_POLICY,
                    err=f"consumer delivery policy is {label}, "
                    "but optional start sequence is also set",
                )
            if self.opt_start_time_ns is not None:
                raise ApiError(
                    Err.CONSUMER_INVALID_POLICY,
                    err=f"consumer delivery policy is {label}, but optional start time is also set",
                )
        for name in (self.durable_name, self.name):
            if name and any(c in name for c in ".*> \t\r\n"):
                raise ApiError(Err.CONSUMER_BAD_DURABLE_NAME)
            if name and any(c in name for c in "/\\"):
                raise ApiError(Err.CONSUMER_NAME_CONTAINS_PATH_SEPARATORS)
            if len(name) > MAX_NAME_LEN:
                raise ApiError(Err.CONSUMER_NAME_TOO_LONG, max=MAX_NAME_LEN)
        if self.ack_wait_ns < 0:
            raise ApiError(Err.CONSUMER_ACK_WAIT_NEGATIVE)
        if any(b <= 0 for b in self.backoff_ns):
            raise ApiError(Err.CONSUMER_BACK_OFF_NEGATIVE)
        if self.ack_policy == "flow_control":
            self._validate_flow_control_acks()
        if self.backoff_ns and 0 < self.max_deliver < len(self.backoff_ns):
            raise ApiError(Err.CONSUMER_MAX_DELIVER_BACKOFF)
        if self.filter_subject and self.filter_subjects:
            raise ApiError(Err.CONSUMER_DUPLICATE_FILTER_SUBJECTS)
        for f in (self.filter_subject, *self.filter_subjects):
            if f and not is_valid_subject(f):
                raise ApiError(Err.STREAM_INVALID_CONFIG, err="invalid subject")
        if any(not f for f in self.filter_subjects):
            raise ApiError(Err.CONSUMER_EMPTY_FILTER)
        try:
            # nats-server refuses a filter that is a subset of another (not every
            # collision); a trie answers that per filter, not per pair
            nested = first_nested(self.filter_subjects)
        except BudgetExceeded:
            raise ApiError(Err.STREAM_INVALID_CONFIG, err="too many filter subjects to check") from None
        if nested is not None:
            raise ApiError(Err.CONSUMER_OVERLAPPING_SUBJECT_FILTERS)
        if self.is_pull:
            if self.max_waiting < 0:
                raise ApiError(Err.CONSUMER_MAX_WAITING_NEGATIVE)
            if self.idle_heartbeat_ns:
                raise ApiError(Err.CONSUMER_HB_REQUIRES_PUSH)
            if self.flow_control:
                raise ApiError(Err.CONSUMER_FC_REQUIRES_PUSH)
            if self.rate_limit_bps:
                raise ApiError(Err.CONSUMER_PULL_WITH_RATE_LIMIT)
            if self.max_batch < 0:
                raise ApiError(Err.CONSUMER_MAX_REQUEST_BATCH_NEGATIVE)
            if 0 < self.max_expires_ns < 1_000_000:
                raise ApiError(Err.CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL)
            if stream_retention == "workqueue" and self.ack_policy != "explicit":
                raise ApiError(Err.CONSUMER_WQ_REQUIRES_EXPLICIT_ACK)
        else:
            if self.max_waiting:
                raise ApiError(Err.CONSUMER_PUSH_MAX_WAITING)
            if any(t in ("*", ">") for t in self.deliver_subject.split(".")):
                raise ApiError(Err.CONSUMER_DELIVER_TO_WILDCARDS)
            if self.flow_control and not self.idle_heartbeat_ns:
                raise ApiError(Err.CONSUMER_WITH_FLOW_CONTROL_NEEDS_HEARTBEATS)
            if 0 < self.idle_heartbeat_ns < MIN_HEARTBEAT_NS:
                raise ApiError(Err.CONSUMER_SMALL_HEARTBEAT)
            if stream_retention == "workqueue" and self.ack_policy not in ("explicit", "flow_control"):
                raise ApiError(Err.CONSUMER_WQ_REQUIRES_EXPLICIT_ACK)
        if stream_retention == "workqueue" and self.deliver_policy != "all":
            raise ApiError(Err.CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL)
        self._validate_priority()

    def _validate_flow_control_acks(self) -> None:
        """nats-server's checks of ack policy flow_control, in its order."""
        if self.is_pull:
            raise ApiError(Err.CONSUMER_ACK_FC_REQUIRES_PUSH)
        if not self.flow_control:
            raise ApiError(Err.CONSUMER_ACK_FC_REQUIRES_FC)
        if self.idle_heartbeat_ns != FLOW_CONTROL_HEARTBEAT_NS:
            raise ApiError(Err.STREAM_INVALID_CONFIG,
                           err="flow control ack policy heartbeat needs to be 1s")
        if self.max_ack_pending <= 0:
            raise ApiError(Err.CONSUMER_ACK_FC_REQUIRES_MAX_ACK_PENDING)
        if self.ack_wait_ns != 0 or self.backoff_ns:
            raise ApiError(Err.CONSUMER_ACK_FC_REQUIRES_NO_ACK_WAIT)
        if self.max_deliver > 0:
            raise ApiError(Err.CONSUMER_ACK_FC_REQUIRES_NO_MAX_DELIVER)

    def _validate_priority(self) -> None:
        """nats-server's checks of `priority_policy`, `priority_groups`, `priority_timeout`."""
        if self.priority_policy != "none":
            if not self.is_pull:
                raise ApiError(Err.CONSUMER_PUSH_WITH_PRIORITY_GROUP)
            if not self.priority_groups:
                raise ApiError(Err.CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP)
            for group in self.priority_groups:
                if not group:
                    raise ApiError(Err.CONSUMER_EMPTY_GROUP_NAME)
                if not valid_group_name(group):
                    raise ApiError(Err.CONSUMER_INVALID_GROUP_NAME)
        else:
            if self.priority_groups:
                raise ApiError(Err.CONSUMER_PRIORITY_GROUP_WITH_POLICY_NONE)
            if self.pinned_ttl_ns:
                raise ApiError(Err.CONSUMER_PINNED_TTL_WITHOUT_PRIORITY_POLICY_NONE)

    def update_error(self, new: ConsumerConfig) -> str | None:
        """Why `new` may not replace this config (nats-server's wording), or None."""
        if self.is_pull and not new.is_pull:
            return "can not update pull consumer to push based"
        if not self.is_pull and new.is_pull:
            return "can not update push consumer to pull based"
        checks = (
            (self.deliver_policy != new.deliver_policy, "deliver policy can not be updated"),
            (self.opt_start_seq != new.opt_start_seq, "start sequence can not be updated"),
            (self.opt_start_time_ns != new.opt_start_time_ns, "start time can not be updated"),
            (self.ack_policy != new.ack_policy, "ack policy can not be updated"),
            (self.replay_policy != new.replay_policy, "replay policy can not be updated"),
            (self.idle_heartbeat_ns != new.idle_heartbeat_ns, "heart beats can not be updated"),
            (self.flow_control != new.flow_control, "flow control can not be updated"),
            (self.max_waiting != new.max_waiting, "max waiting can not be updated"),
            (self.mem_storage != new.mem_storage, "storage type can not be updated"),
        )
        return next((message for changed, message in checks if changed), None)

    def same_as(self, other: ConsumerConfig) -> bool:
        """Equal in every field that matters (`extra` is not compared)."""
        return self == other
