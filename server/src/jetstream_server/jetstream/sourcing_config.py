"""Stream config parts for transforms, republish, mirrors and sources.

`TransformConfig` (`subject_transform` and each entry of a source's
`subject_transforms`), `RepublishConfig` (`republish`) and `SourceConfig`
(`mirror` and each entry of `sources`) parse the client's JSON, answer it in
nats-server's shape (`to_json`, empty fields left out as Go's `omitempty`),
and `check_sourcing(...)` raises the nats-server error for what its
`checkStreamCfg` refuses without looking at other streams (the checks that
need the other streams, such as cycles, live in jetstream/sourcing/).

Invariant: a parsed config only holds transforms that `SubjectTransform`
accepts; `SourceConfig.index_name` is nats-server's `composeIName`, the key
by which a stream tells its sources apart (and finds its progress in the
`Nats-Stream-Source` headers it stored).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jetstream_server.core.gotime import parse_rfc3339_ns
from jetstream_server.core.subjects import (
    filters_overlap,
    is_subset_filter,
    is_valid_publish_subject,
    is_valid_subject,
)
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.transform import (
    ERR_BAD_SUBJECT,
    SubjectTransform,
    TransformError,
    validate_mapping,
)

FWC = ">"


def _json_error(key: str, expected: str, value: Any) -> ApiError:
    return ApiError(Err.INVALID_JSON, err=f"field {key!r} must be {expected}, got {value!r}")


def _str(raw: dict[str, Any], key: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _json_error(key, "a string", value)
    return value


def _obj(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _json_error(key, "an object", value)
    return value


@dataclass(frozen=True, slots=True)
class TransformConfig:
    src: str
    dest: str

    @classmethod
    def from_json(cls, raw: Any, key: str = "subject_transform") -> TransformConfig:
        body = _obj(raw, key)
        return cls(_str(body, "src"), _str(body, "dest"))

    def to_json(self) -> dict[str, Any]:
        return {"src": self.src, "dest": self.dest}

    def build(self) -> SubjectTransform | None:
        """The transform (None when `dest` is empty: nats-server makes none then)."""
        return SubjectTransform(self.src, self.dest) if self.dest else None


@dataclass(frozen=True, slots=True)
class RepublishConfig:
    src: str
    dest: str
    headers_only: bool = False

    @classmethod
    def from_json(cls, raw: Any) -> RepublishConfig:
        body = _obj(raw, "republish")
        headers_only = body.get("headers_only", False)
        if not isinstance(headers_only, bool):
            raise _json_error("headers_only", "a boolean", headers_only)
        return cls(_str(body, "src"), _str(body, "dest"), headers_only)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.src:
            out["src"] = self.src
        out["dest"] = self.dest
        if self.headers_only:
            out["headers_only"] = True
        return out


@dataclass(frozen=True, slots=True)
class SourceConfig:
    name: str
    opt_start_seq: int = 0
    opt_start_time: str = ""  # as the client wrote it
    opt_start_time_ns: int | None = None
    filter_subject: str = ""
    subject_transforms: tuple[TransformConfig, ...] = ()
    external: dict[str, Any] | None = None
    consumer: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, raw: Any, key: str) -> SourceConfig:
        body = _obj(raw, key)
        name = body.get("name", "")
        if not isinstance(name, str):
            raise _json_error("name", "a string", name)
        seq = body.get("opt_start_seq", 0) or 0
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < (1 << 64):
            raise _json_error("opt_start_seq", "an unsigned integer", seq)
        start_time = _str(body, "opt_start_time")
        start_ns: int | None = None
        if start_time:
            try:
                start_ns = parse_rfc3339_ns(start_time)
            except ValueError as exc:
                raise ApiError(Err.INVALID_JSON, err=str(exc)) from exc
        transforms_raw = body.get("subject_transforms") or []
        if not isinstance(transforms_raw, list):
            raise _json_error("subject_transforms", "a list", transforms_raw)
        external = body.get("external")
        consumer = body.get("consumer")
        return cls(
            name=name,
            opt_start_seq=seq,
            opt_start_time=start_time,
            opt_start_time_ns=start_ns,
            filter_subject=_str(body, "filter_subject"),
            subject_transforms=tuple(
                TransformConfig.from_json(t, "subject_transforms") for t in transforms_raw
            ),
            external=None if external is None else dict(_obj(external, "external")),
            consumer=None if consumer is None else dict(_obj(consumer, "consumer")),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.opt_start_seq:
            out["opt_start_seq"] = self.opt_start_seq
        if self.opt_start_time:
            out["opt_start_time"] = self.opt_start_time
        if self.filter_subject:
            out["filter_subject"] = self.filter_subject
        if self.subject_transforms:
            out["subject_transforms"] = [t.to_json() for t in self.subject_transforms]
        if self.external is not None:
            out["external"] = dict(self.external)
        if self.consumer is not None:
            out["consumer"] = dict(self.consumer)
        return out

    # -- what the sourcing code uses --------------------------------------------
    @property
    def filters(self) -> tuple[str, ...]:
        """The origin subjects this source reads (empty: all of them)."""
        if self.subject_transforms:
            return tuple(t.src or FWC for t in self.subject_transforms)
        return (self.filter_subject,) if self.filter_subject else ()

    def transforms(self) -> tuple[SubjectTransform | None, ...]:
        return tuple(t.build() for t in self.subject_transforms)

    @property
    def index_name(self) -> str:
        """nats-server's composeIName: `<name> <filters> <destinations>`."""
        if self.subject_transforms:
            source = "\f".join(t.src or FWC for t in self.subject_transforms)
            dest = "\f".join(t.dest or FWC for t in self.subject_transforms)
        else:
            source, dest = self.filter_subject or FWC, FWC
        return f"{self.name} {source} {dest}"


def parse_sources(raw: Any) -> tuple[SourceConfig, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _json_error("sources", "a list", raw)
    return tuple(SourceConfig.from_json(s, "sources") for s in raw)


def _valid_asset_name(name: str) -> bool:
    # nats-server's isValidAssetName: non-empty, no '.', '*', '>', path separators, whitespace
    return bool(name) and not any(c in name for c in ".*> \t\r\n\f/\\")


def _transform_checks(
    transforms: tuple[TransformConfig, ...], bad_source: Err, bad_dest: Err
) -> None:
    for tr in transforms:
        if tr.src and not is_valid_subject(tr.src):
            raise ApiError(bad_source, err=f"{ERR_BAD_SUBJECT} {tr.src}")
        try:
            validate_mapping(tr.src, tr.dest)
        except TransformError as exc:
            raise ApiError(bad_dest, err=str(exc)) from exc


_MIRROR_FLAG_ERRORS = (
    ("allow_msg_counter", Err.MIRROR_WITH_COUNTERS),
    ("allow_atomic", Err.MIRROR_WITH_ATOMIC_PUBLISH),
    ("allow_batched", Err.MIRROR_WITH_BATCH_PUBLISH),
    ("allow_msg_schedules", Err.MIRROR_WITH_MSG_SCHEDULES),
)


def check_mirror(mirror: SourceConfig, *, has_subjects: bool, has_sources: bool,
                 first_seq: int, marker_ttl: int, flags: tuple[str, ...] = ()) -> None:
    """The mirror checks of nats-server's checkStreamCfg, in its order (`flags`:
    the stream's feature flags that are on)."""
    if first_seq > 0:
        raise ApiError(Err.MIRROR_WITH_FIRST_SEQ)
    if has_subjects:
        raise ApiError(Err.MIRROR_WITH_SUBJECTS)
    if has_sources:
        raise ApiError(Err.MIRROR_WITH_SOURCES)
    for flag, error in _MIRROR_FLAG_ERRORS:
        if flag in flags:
            raise ApiError(error)
    consumer = mirror.consumer
    if consumer is not None:
        deliver = str(consumer.get("deliver_subject") or "")
        if (
            not _valid_asset_name(str(consumer.get("name") or ""))
            or not is_valid_publish_subject(deliver)
            or mirror.opt_start_seq
            or mirror.opt_start_time
            or mirror.filter_subject
        ):
            raise ApiError(Err.MIRROR_DURABLE_CONSUMER_CFG_INVALID)
    if mirror.filter_subject and mirror.subject_transforms:
        raise ApiError(Err.MIRROR_MULTIPLE_FILTERS_NOT_ALLOWED)
    if marker_ttl > 0:
        raise ApiError(Err.STREAM_INVALID_CONFIG, err="subject delete markers forbidden on mirrors")
    transforms = mirror.subject_transforms
    for i, tr in enumerate(transforms):
        _transform_checks((tr,), Err.MIRROR_INVALID_SUBJECT_FILTER,
                          Err.MIRROR_INVALID_TRANSFORM_DESTINATION)
        for j, other in enumerate(transforms):
            if i != j and filters_overlap(tr.src or FWC, other.src or FWC):
                raise ApiError(Err.MIRROR_OVERLAPPING_SUBJECT_FILTERS)
    if mirror.external is None and not _valid_asset_name(mirror.name):
        raise ApiError(Err.MIRROR_INVALID_STREAM_NAME)


def check_sources(sources: tuple[SourceConfig, ...]) -> None:
    """The per-source checks of nats-server's checkStreamCfg, in its order."""
    seen: set[str] = set()
    consumers: set[str] = set()
    for src in sources:
        if not _valid_asset_name(src.name):
            raise ApiError(Err.SOURCE_INVALID_STREAM_NAME)
        if src.index_name in seen:
            raise ApiError(Err.SOURCE_DUPLICATE_DETECTED)
        seen.add(src.index_name)
        if src.filter_subject and src.subject_transforms:
            raise ApiError(Err.SOURCE_MULTIPLE_FILTERS_NOT_ALLOWED)
        _transform_checks(src.subject_transforms, Err.SOURCE_INVALID_SUBJECT_FILTER,
                          Err.SOURCE_INVALID_TRANSFORM_DESTINATION)
        for i, tr in enumerate(src.subject_transforms):
            for j, other in enumerate(src.subject_transforms):
                if i != j and is_subset_filter(tr.src, other.src):
                    raise ApiError(Err.SOURCE_OVERLAPPING_SUBJECT_FILTERS)
        consumer = src.consumer
        if consumer is not None:
            deliver = str(consumer.get("deliver_subject") or "")
            if (
                not _valid_asset_name(str(consumer.get("name") or ""))
                or not is_valid_publish_subject(deliver)
                or src.opt_start_seq
                or src.opt_start_time
                or src.filter_subject
            ):
                raise ApiError(Err.SOURCE_DURABLE_CONSUMER_CFG_INVALID)
            key = f"{src.name} {consumer.get('name')}"
            if key in consumers:
                raise ApiError(Err.SOURCE_DURABLE_CONSUMER_DUPLICATE_DETECTED)
            consumers.add(key)


def check_subject_transform(transform: TransformConfig) -> None:
    if transform.src and not is_valid_subject(transform.src):
        raise ApiError(Err.STREAM_TRANSFORM_INVALID_SOURCE, err=f"{ERR_BAD_SUBJECT} {transform.src}")
    try:
        validate_mapping(transform.src, transform.dest)
    except TransformError as exc:
        raise ApiError(Err.STREAM_TRANSFORM_INVALID_DESTINATION, err=str(exc)) from exc


def normalized_republish(
    republish: RepublishConfig, subjects: tuple[str, ...], transform: TransformConfig | None
) -> RepublishConfig:
    """nats-server's republish checks: empty `src` is `>`; `>` to `>` with a
    transform of the only subject republishes the transformed subjects; a
    destination colliding with the stream's subjects is a cycle."""
    src, dest = republish.src or FWC, republish.dest
    if not dest:  # nats-server makes no transform then: nothing is republished
        return RepublishConfig(src, dest, republish.headers_only)
    if (
        dest == FWC and src == FWC and transform is not None
        and len(subjects) == 1 and transform.src == subjects[0]
    ):
        src = dest = transform.dest
    if any(filters_overlap(dest, subject) for subject in subjects):
        raise ApiError(Err.STREAM_INVALID_CONFIG,
                       err="stream configuration for republish destination forms a cycle")
    try:
        SubjectTransform(src, dest)
    except TransformError as exc:
        raise ApiError(
            Err.STREAM_INVALID_CONFIG,
            err=f"stream configuration for republish with transform from '{src}' to '{dest}' not valid",
        ) from exc
    return RepublishConfig(src, dest, republish.headers_only)
