"""Stream configuration: parsing, defaults and validation as nats-server does them.

`StreamConfig.from_json(dict)` applies the defaults nats-server fills in
(`max_*` of 0 -> -1, `duplicate_window` 2 min or `max_age` when smaller,
`storage` file, `retention` limits, `discard` old, `num_replicas` 1,
`subjects` = [name] when none are given) and raises `ApiError` with the
nats-server error for invalid input. `to_json()` answers the config in
nats-server's key order. Keys this server does not act on (placement
and the like) are kept in `extra` and echoed back unchanged.

The policies are `Literal` types (`Retention`, `Storage`, `Discard`,
`Compression`, `PersistMode`) and the feature flags of 2.12 and 2.14
(`allow_msg_counter`, `allow_atomic`, `allow_msg_schedules`,
`allow_batched`) and `persist_mode` are typed fields: a misspelt policy or
flag is a type error, not a silently false lookup. On the wire they are
echoed where the client put them among the unknown keys (`json_order`), true
flags only and `persist_mode` only when `async` (Go's omitempty), so a config
comes back byte for byte as it was stored.

Invariant: a `StreamConfig` that exists has passed validation; durations are
nanoseconds (`max_age`, `duplicate_window`, as on the wire).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypeVar, get_args

from jetstream_server.core.filter_set import BudgetExceeded, first_collision_steps
from jetstream_server.core.gotime import format_duration
from jetstream_server.core.steps import Steps, drive
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.settings import ServerLimits
from jetstream_server.jetstream.sourcing_config import (
    RepublishConfig,
    SourceConfig,
    TransformConfig,
    check_mirror,
    check_sources,
    check_subject_transform,
    normalized_republish,
    parse_sources,
)
from jetstream_server.jetstream.subject_match import is_valid_subject, subjects_overlap

DEFAULT_DUPLICATE_WINDOW_NS = 120 * 1_000_000_000
NS_PER_S = 1_000_000_000
# nats-server's caps on names, descriptions and metadata (jetstream_api.go)
MAX_NAME_LEN = 255
MAX_DESCRIPTION_LEN = 4 * 1024
MAX_METADATA_LEN = 128 * 1024


def metadata_size(metadata: Any) -> int:
    """Bytes of keys and values, as nats-server counts metadata against its cap."""
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in dict(metadata).items())


def stream_consumer_limits(config: StreamConfig) -> tuple[int, int]:
    """A stream's ``consumer_limits``: (max_ack_pending, inactive_threshold ns), 0 = none."""
    raw = config.consumer_limits
    values = []
    for key in ("max_ack_pending", "inactive_threshold"):
        value = raw.get(key, 0)
        values.append(value if isinstance(value, int) and not isinstance(value, bool) else 0)
    return values[0], values[1]


Retention = Literal["limits", "interest", "workqueue"]
Storage = Literal["file", "memory"]
Discard = Literal["old", "new"]
Compression = Literal["none", "s2"]
# `persist_mode` (2.12, level 2): "default" (omitted, as Go's omitempty does) or "async"
PersistMode = Literal["default", "async"]
# the first of each is the default
RETENTIONS: Final[tuple[Retention, ...]] = get_args(Retention)
STORAGES: Final[tuple[Storage, ...]] = get_args(Storage)
DISCARDS: Final[tuple[Discard, ...]] = get_args(Discard)
COMPRESSIONS: Final[tuple[Compression, ...]] = get_args(Compression)
PERSIST_MODES: Final[tuple[PersistMode, ...]] = get_args(PersistMode)

# nats-server's stored-config metadata key for the API level a stream needs.
REQUIRED_LEVEL_KEY = "_nats.req.level"

_KNOWN_KEYS = (
    "name",
    "description",
    "subjects",
    "retention",
    "max_consumers",
    "max_msgs",
    "max_bytes",
    "max_age",
    "max_msgs_per_subject",
    "max_msg_size",
    "discard",
    "discard_new_per_subject",
    "storage",
    "num_replicas",
    "no_ack",
    "duplicate_window",
    "compression",
    "allow_direct",
    "mirror_direct",
    "sealed",
    "deny_delete",
    "deny_purge",
    "allow_rollup_hdrs",
    "allow_msg_ttl",
    "subject_delete_marker_ttl",
    "first_seq",
    "consumer_limits",
    "metadata",
    "mirror",
    "sources",
    "subject_transform",
    "republish",
)

# 2.12 stream features (API level 2) and 2.14's fast batch publish (level 4):
# typed fields, echoed back when true and omitted when false (Go's omitempty)
FEATURE_FLAGS: Final = ("allow_msg_counter", "allow_atomic", "allow_msg_schedules", "allow_batched")
FEATURE_LEVELS: Final = {"allow_batched": 4}
# keys after the known ones: echoed in the order the client sent them (`json_order`)
_TAIL_KEYS: Final = frozenset((*FEATURE_FLAGS, "persist_mode"))

_NAME_FORBIDDEN = (".", "*", ">")
_PATH_SEPARATORS = ("\\", "/")


def invalid(message: str) -> ApiError:
    return ApiError(Err.STREAM_INVALID_CONFIG, err=message)


def validate_stream_name(name: Any) -> str:
    """nats-server refuses empty names, `.`, `*`, `>`, path separators and whitespace."""
    if isinstance(name, str) and any(c in name for c in _PATH_SEPARATORS):
        raise ApiError(Err.STREAM_NAME_CONTAINS_PATH_SEPARATORS)
    if (
        not isinstance(name, str)
        or not name
        or any(c in name for c in _NAME_FORBIDDEN)
        or any(c.isspace() for c in name)
    ):
        raise invalid("stream name is required and can not contain '.', '*', '>', '\\', '/'")
    return name


def _int(raw: dict[str, Any], key: str, default: int = 0) -> int:
    """An int64 field as Go decodes it: integers only, in range."""
    value = raw.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(Err.INVALID_JSON, err=f"field {key!r} must be a number, got {value!r}")
    if not -(1 << 63) <= value < (1 << 63):
        raise ApiError(Err.INVALID_JSON, err=f"field {key!r} overflows int64: {value}")
    return value


def _bool(raw: dict[str, Any], key: str) -> bool:
    value = raw.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ApiError(Err.INVALID_JSON, err=f"field {key!r} must be a boolean, got {value!r}")
    return value


_Choice = TypeVar("_Choice", bound=str)


def _choice(raw: dict[str, Any], key: str, choices: tuple[_Choice, ...]) -> _Choice:
    """One of `choices` (the first when absent or empty), typed as the choices are."""
    value = raw.get(key)
    if value is None or value == "":
        return choices[0]
    if value not in choices:
        raise ApiError(Err.INVALID_JSON, err=f"can not unmarshal {json.dumps(json.dumps(value))}")
    return choices[choices.index(value)]


def _flag(raw: dict[str, Any], key: str) -> bool:
    """A feature flag; nats-server's decoder error for anything but a boolean."""
    value = raw.get(key, False)
    if not isinstance(value, bool):
        kind = ("number" if isinstance(value, (int, float)) else "string"
                if isinstance(value, str) else "array" if isinstance(value, list)
                else "object")
        raise ApiError(Err.INVALID_JSON, err=f"json: cannot unmarshal {kind} into Go struct "
                       f"field StreamConfigRequest.{key} of type bool")
    return value


@dataclass(frozen=True, slots=True)
class StreamConfig:
    name: str
    subjects: tuple[str, ...] = ()
    description: str = ""
    retention: Retention = "limits"
    max_consumers: int = -1
    max_msgs: int = -1
    max_bytes: int = -1
    max_age: int = 0  # ns, 0 = unlimited
    max_msgs_per_subject: int = -1
    max_msg_size: int = -1
    discard: Discard = "old"
    discard_new_per_subject: bool = False
    storage: Storage = "file"
    num_replicas: int = 1
    no_ack: bool = False
    duplicate_window: int = DEFAULT_DUPLICATE_WINDOW_NS  # ns
    compression: Compression = "none"
    allow_direct: bool = False
    mirror_direct: bool = False
    sealed: bool = False
    deny_delete: bool = False
    deny_purge: bool = False
    allow_rollup_hdrs: bool = False
    allow_msg_ttl: bool = False
    subject_delete_marker_ttl: int = 0  # ns
    first_seq: int = 0
    consumer_limits: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    mirror: SourceConfig | None = None
    sources: tuple[SourceConfig, ...] = ()
    subject_transform: TransformConfig | None = None
    republish: RepublishConfig | None = None
    allow_msg_counter: bool = False  # counters.py
    allow_atomic: bool = False  # atomic_batch.py
    allow_msg_schedules: bool = False  # schedules.py
    allow_batched: bool = False  # fast_batch.py
    persist_mode: PersistMode = "default"
    # keys this server does not act on, echoed back unchanged
    extra: dict[str, Any] = field(default_factory=dict)
    # the feature flags, persist_mode and `extra` keys in the order the client
    # sent them: `to_json` echoes them so (not part of equality)
    json_order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    # -- parsing -------------------------------------------------------------
    @classmethod
    def from_json(cls, raw: Any, *, name: str | None = None, validate: bool = True) -> StreamConfig:
        """Parse a client's config (already decoded JSON) and fill defaults; then
        `validated()` unless told not to (a create of many subjects validates in
        turns: `validation`)."""
        if not isinstance(raw, dict):
            raise ApiError(Err.INVALID_JSON, err="stream config must be a JSON object")
        stream_name = validate_stream_name(raw.get("name", name))
        subjects_raw = raw.get("subjects") or []
        if not isinstance(subjects_raw, list) or not all(isinstance(s, str) for s in subjects_raw):
            raise ApiError(Err.INVALID_JSON, err="field 'subjects' must be a list of strings")
        mirror = None if raw.get("mirror") is None else SourceConfig.from_json(raw["mirror"], "mirror")
        sources = parse_sources(raw.get("sources"))
        # a mirror or a stream with sources may have no subjects of its own
        subjects = tuple(subjects_raw) if subjects_raw or mirror or sources else (stream_name,)
        transform_raw = raw.get("subject_transform")
        republish_raw = raw.get("republish")

        def limit(key: str) -> int:
            value = _int(raw, key)
            return -1 if value == 0 else value

        max_age = _int(raw, "max_age")
        dup = _int(raw, "duplicate_window")
        metadata = raw.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ApiError(Err.INVALID_JSON, err="field 'metadata' must be an object")
        consumer_limits = raw.get("consumer_limits") or {}
        if not isinstance(consumer_limits, dict):
            raise ApiError(Err.INVALID_JSON, err="field 'consumer_limits' must be an object")
        description = raw.get("description") or ""
        if not isinstance(description, str):
            raise ApiError(Err.INVALID_JSON, err="field 'description' must be a string")
        cfg = cls(
            name=stream_name,
            subjects=subjects,
            description=description,
            retention=_choice(raw, "retention", RETENTIONS),
            max_consumers=limit("max_consumers"),
            max_msgs=limit("max_msgs"),
            max_bytes=limit("max_bytes"),
            max_age=max_age,
            max_msgs_per_subject=limit("max_msgs_per_subject"),
            max_msg_size=limit("max_msg_size"),
            discard=_choice(raw, "discard", DISCARDS),
            discard_new_per_subject=_bool(raw, "discard_new_per_subject"),
            storage=_choice(raw, "storage", STORAGES),
            num_replicas=_int(raw, "num_replicas") or 1,
            no_ack=_bool(raw, "no_ack"),
            duplicate_window=dup,
            compression=_choice(raw, "compression", COMPRESSIONS),
            allow_direct=_bool(raw, "allow_direct"),
            mirror_direct=_bool(raw, "mirror_direct"),
            sealed=_bool(raw, "sealed"),
            deny_delete=_bool(raw, "deny_delete"),
            deny_purge=_bool(raw, "deny_purge"),
            allow_rollup_hdrs=_bool(raw, "allow_rollup_hdrs"),
            allow_msg_ttl=_bool(raw, "allow_msg_ttl"),
            subject_delete_marker_ttl=_int(raw, "subject_delete_marker_ttl"),
            first_seq=_int(raw, "first_seq"),
            consumer_limits=dict(consumer_limits),
            metadata={str(k): str(v) for k, v in metadata.items()},
            mirror=mirror,
            sources=sources,
            subject_transform=None if transform_raw is None else TransformConfig.from_json(transform_raw),
            republish=None if republish_raw is None else RepublishConfig.from_json(republish_raw),
            extra={
                k: v for k, v in raw.items()
                if k not in _KNOWN_KEYS and k not in _TAIL_KEYS and k != "created"
            },
            json_order=tuple(k for k in raw if k not in _KNOWN_KEYS and k != "created"),
        )
        cfg = replace(
            cfg,
            persist_mode=_choice(raw, "persist_mode", PERSIST_MODES),
            allow_msg_counter=_flag(raw, "allow_msg_counter"),
            allow_atomic=_flag(raw, "allow_atomic"),
            allow_msg_schedules=_flag(raw, "allow_msg_schedules"),
            allow_batched=_flag(raw, "allow_batched"),
        )
        cfg = cfg.with_defaults()
        return cfg.validated() if validate else cfg

    def with_defaults(self) -> StreamConfig:
        dup = self.duplicate_window
        # as nats-server: no default dedup window for a mirror or a stream with sources
        if dup <= 0 and self.mirror is None and not self.sources:
            dup = DEFAULT_DUPLICATE_WINDOW_NS
            if 0 < self.max_age < dup:
                dup = self.max_age
        # The server's own keys: the required level is recomputed, the
        # answer-only ones a client may echo back are not stored.
        metadata = {k: v for k, v in self.metadata.items() if k not in ("_nats.level", "_nats.ver")}
        metadata[REQUIRED_LEVEL_KEY] = str(self.required_api_level())
        # A sealed stream takes nothing new; nats-server reports it with discard new.
        discard = "new" if self.sealed else self.discard
        # Subject delete markers carry Nats-TTL and Nats-Rollup: nats-server
        # turns both features on for such a stream.
        markers = self.subject_delete_marker_ttl > 0
        # schedules store with Nats-Rollup: sub: nats-server turns roll-ups on
        scheduled = self.allow_msg_schedules
        return replace(
            self, duplicate_window=dup, metadata=metadata, discard=discard,
            allow_msg_ttl=self.allow_msg_ttl or markers,
            allow_rollup_hdrs=self.allow_rollup_hdrs or markers or scheduled,
        )

    def within(self, limits: ServerLimits, window_given: bool) -> StreamConfig:
        """This config under the server's limits: a defaulted dedup window is
        capped by `limits.duplicate_window_ns`; a larger one asked for is refused."""
        cap = limits.duplicate_window_ns
        if cap <= 0:
            return self
        if not window_given and self.duplicate_window > cap:
            return replace(self, duplicate_window=cap)
        if self.duplicate_window > cap:
            raise invalid(
                f"duplicates window can not be larger then server limit of {format_duration(cap)}"
            )
        return self

    def features(self) -> dict[str, bool]:
        """The `FEATURE_FLAGS` by their JSON names."""
        return {
            "allow_msg_counter": self.allow_msg_counter,
            "allow_atomic": self.allow_atomic,
            "allow_msg_schedules": self.allow_msg_schedules,
            "allow_batched": self.allow_batched,
        }

    @property
    def async_persist(self) -> bool:
        """`persist_mode: async`: a publish is acknowledged before it is synced."""
        return self.persist_mode == "async"

    def required_api_level(self) -> int:
        """The JetStream API level (ADR-44) the features of this config need."""
        levels = [FEATURE_LEVELS.get(name, 2) for name, on in self.features().items() if on]
        if self.async_persist:
            levels.append(2)
        if levels:
            return max(levels)
        if self.allow_msg_ttl or self.subject_delete_marker_ttl > 0:
            return 1
        return 0

    def _check_features(self) -> None:
        """nats-server's checks of the 2.12 features against the rest of the config."""
        if self.allow_msg_counter:
            if self.discard == "new":
                raise invalid("counter stream cannot use discard new")
            if self.allow_msg_ttl:
                raise invalid("counter stream cannot use message TTLs")
            if self.allow_msg_schedules:
                raise invalid("counter stream cannot use message schedules")
            if self.retention != "limits":
                raise invalid("counter stream can only use limits retention")
        if self.allow_msg_schedules and self.discard == "new":
            raise invalid("message scheduling cannot use discard new")
        if self.async_persist:
            if self.storage != "file":
                raise invalid("async persist mode is only supported on file storage")
            if self.num_replicas > 1:
                raise invalid("async persist mode is not supported on replicated streams")
            if self.allow_atomic:
                raise invalid("async persist mode is not supported with atomic batch publish")

    def validated(self) -> StreamConfig:
        """Raise the nats-server error for a config it would refuse."""
        return drive(self.validation(len(self.subjects) + 1))

    def validation(self, step: int) -> Steps[StreamConfig]:
        """`validated`, yielding after each `step` subjects of the per-subject
        checks (a create of many subjects works in loop turns); the same errors
        in the same order."""
        if len(self.name.encode()) > MAX_NAME_LEN:
            raise invalid(f"stream name is too long, maximum allowed is {MAX_NAME_LEN}")
        if len(self.description.encode()) > MAX_DESCRIPTION_LEN:
            raise invalid(f"stream description is too long, maximum allowed is {MAX_DESCRIPTION_LEN}")
        if metadata_size(self.metadata) > MAX_METADATA_LEN:
            raise invalid(f"stream metadata exceeds maximum size of {MAX_METADATA_LEN} bytes")
        if self.num_replicas < 0:
            raise ApiError(Err.REPLICAS_COUNT_CANNOT_BE_NEGATIVE)
        if self.num_replicas > 1:
            raise ApiError(Err.STREAM_REPLICAS_NOT_SUPPORTED)
        if self.max_age < 0:
            raise invalid("max age can not be negative")
        if self.duplicate_window < 0:
            raise invalid("duplicates window can not be negative")
        if self.max_age and self.duplicate_window > self.max_age:
            raise invalid("duplicates window can not be larger then max age")
        if self.max_msg_size > 0 and self.max_msg_size > (1 << 31):
            raise invalid("max message size too large")
        if self.discard_new_per_subject and (
            self.discard != "new" or self.max_msgs_per_subject <= 0
        ):
            if self.discard != "new":
                raise invalid("discard new per subject requires discard new policy to be set")
            raise invalid("discard new per subject requires max msgs per subject > 0")
        if self.first_seq < 0:
            raise invalid("first sequence can not be negative")
        self._check_features()
        if 0 < self.subject_delete_marker_ttl < NS_PER_S:
            raise invalid("subject delete marker TTL must be at least 1 second")
        if self.subject_delete_marker_ttl < 0:
            raise invalid("subject delete marker TTL must not be negative")
        if self.mirror is not None:
            check_mirror(self.mirror, has_subjects=bool(self.subjects), has_sources=bool(self.sources),
                         first_seq=self.first_seq, marker_ttl=self.subject_delete_marker_ttl,
                         flags=tuple(name for name, on in self.features().items() if on))
        check_sources(self.sources)
        try:
            # one pass over a trie, not every pair (3000 subjects: 4.5 million pairs)
            overlap = yield from first_collision_steps(self.subjects, step)
        except BudgetExceeded:
            raise invalid("too many subjects to check for overlaps") from None
        for i, subject in enumerate(self.subjects):
            if i and i % step == 0:
                yield
            # in nats-server's order: each subject's own checks, then its overlap with later ones
            if not is_valid_subject(subject):
                raise invalid("invalid subject")
            if subject == ">" and not self.no_ack:
                raise invalid("capturing all subjects requires no-ack to be true")
            if not self.no_ack and subject[:1] in "$*>" and subjects_overlap(subject, "$JS.API.>"):
                raise invalid("subjects that overlap with jetstream api require no-ack to be true")
            if overlap is not None and overlap[0] == i:
                raise invalid(f'subject "{subject}" overlaps with "{self.subjects[overlap[1]]}"')
        if self.subject_transform is not None:
            check_subject_transform(self.subject_transform)
        if self.republish is not None:
            republish = normalized_republish(self.republish, self.subjects, self.subject_transform)
            if republish != self.republish:
                return replace(self, republish=republish)
        return self

    # -- output --------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The config as nats-server answers it (key order kept)."""
        out: dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        if self.subjects:
            out["subjects"] = list(self.subjects)
        out.update(
            {
                "retention": self.retention,
                "max_consumers": self.max_consumers,
                "max_msgs": self.max_msgs,
                "max_bytes": self.max_bytes,
                "max_age": self.max_age,
                "max_msgs_per_subject": self.max_msgs_per_subject,
                "max_msg_size": self.max_msg_size,
                "discard": self.discard,
            }
        )
        if self.discard_new_per_subject:
            out["discard_new_per_subject"] = True
        out.update(
            {
                "storage": self.storage,
                "num_replicas": self.num_replicas,
            }
        )
        if self.no_ack:
            out["no_ack"] = True
        if self.duplicate_window:
            out["duplicate_window"] = self.duplicate_window
        if self.mirror is not None:
            out["mirror"] = self.mirror.to_json()
        if self.sources:
            out["sources"] = [s.to_json() for s in self.sources]
        if self.subject_transform is not None:
            out["subject_transform"] = self.subject_transform.to_json()
        if self.republish is not None:
            out["republish"] = self.republish.to_json()
        out.update(
            {
                "compression": self.compression,
                "allow_direct": self.allow_direct,
                "mirror_direct": self.mirror_direct,
                "sealed": self.sealed,
                "deny_delete": self.deny_delete,
                "deny_purge": self.deny_purge,
                "allow_rollup_hdrs": self.allow_rollup_hdrs,
                "consumer_limits": dict(self.consumer_limits),
                "allow_msg_ttl": self.allow_msg_ttl,
            }
        )
        if self.subject_delete_marker_ttl:
            out["subject_delete_marker_ttl"] = self.subject_delete_marker_ttl
        if self.first_seq:
            out["first_seq"] = self.first_seq
        out.update(self._tail_json())
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out

    def _tail_json(self) -> dict[str, Any]:
        """The true feature flags, an async `persist_mode` and the `extra` keys,
        in the order the client sent them (keys set in code, not parsed, after)."""
        tail: dict[str, Any] = {name: True for name, on in self.features().items() if on}
        if self.persist_mode != "default":
            tail["persist_mode"] = self.persist_mode
        tail.update(self.extra)
        ordered = {key: tail.pop(key) for key in self.json_order if key in tail}
        ordered.update(tail)
        return ordered

    # -- comparisons used by the API ------------------------------------------
    def same_as(self, other: StreamConfig) -> bool:
        """Equal for STREAM.CREATE idempotency (metadata the server adds ignored)."""

        def strip(c: StreamConfig) -> dict[str, Any]:
            d = c.to_json()
            meta = {k: v for k, v in (d.pop("metadata", {}) or {}).items() if not k.startswith("_nats.")}
            d["metadata"] = meta
            return d

        return strip(self) == strip(other)

    def check_update(self, new: StreamConfig) -> None:
        """Raise the nats-server error for an update it would refuse."""
        if new.storage != self.storage:
            raise invalid("stream configuration update can not change storage type")
        if new.retention != self.retention:
            if not (self.retention == "limits" and new.retention == "interest") and not (
                self.retention == "interest" and new.retention == "limits"
            ):
                raise invalid("stream configuration update can not change retention policy to/from workqueue")
        if self.sealed and not new.sealed:
            raise invalid("stream configuration update can not unseal a sealed stream")
        if self.deny_delete and not new.deny_delete:
            raise invalid("stream configuration update can not cancel deny message deletes")
        if self.deny_purge and not new.deny_purge:
            raise invalid("stream configuration update can not cancel deny purge")
        # removing the mirror promotes it to a normal stream; changing it is refused
        if new.mirror is not None and new.mirror != self.mirror:
            raise ApiError(Err.STREAM_MIRROR_NOT_UPDATABLE)
        if new.num_replicas != self.num_replicas and new.num_replicas > 1:
            raise ApiError(Err.STREAM_REPLICAS_NOT_SUPPORTED)
        if self.allow_msg_ttl and not new.allow_msg_ttl:
            raise invalid("message TTL status can not be disabled")
        if self.allow_msg_counter != new.allow_msg_counter:
            raise invalid("stream configuration update can not change message counter setting")
        if self.allow_msg_schedules and not new.allow_msg_schedules:
            raise invalid("message schedules can not be disabled")
        if self.async_persist != new.async_persist:
            raise invalid("stream configuration update can not change persist mode")
