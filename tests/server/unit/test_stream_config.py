"""StreamConfig: defaults as nats-server fills them, validation errors, JSON round trip."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from jetstream_server.jetstream.errors import ApiError
from jetstream_server.jetstream.stream_config import StreamConfig


def err(raw: Any) -> tuple[int, int, str]:
    with pytest.raises(ApiError) as info:
        StreamConfig.from_json(raw)
    return info.value.code, info.value.err_code, info.value.description


def test_defaults() -> None:
    cfg = StreamConfig.from_json({"name": "S"})
    assert cfg.subjects == ("S",)
    assert (cfg.max_msgs, cfg.max_bytes, cfg.max_msgs_per_subject, cfg.max_msg_size) == (-1,) * 4
    assert cfg.max_consumers == -1 and cfg.max_age == 0
    assert cfg.duplicate_window == 120_000_000_000
    assert (cfg.storage, cfg.retention, cfg.discard, cfg.num_replicas) == ("file", "limits", "old", 1)
    assert cfg.metadata == {"_nats.req.level": "0"}


def test_zero_limits_become_unlimited_and_dup_window_follows_max_age() -> None:
    cfg = StreamConfig.from_json(
        {"name": "S", "max_msgs": 0, "max_bytes": 0, "max_age": 5_000_000_000, "num_replicas": 0}
    )
    assert cfg.max_msgs == -1 and cfg.max_bytes == -1 and cfg.num_replicas == 1
    assert cfg.duplicate_window == 5_000_000_000


def test_ttl_needs_level_one_and_sealed_reports_discard_new() -> None:
    assert StreamConfig.from_json({"name": "S", "allow_msg_ttl": True}).metadata[
        "_nats.req.level"
    ] == "1"
    assert StreamConfig.from_json({"name": "S", "sealed": True}).discard == "new"


def test_round_trip_keeps_unknown_keys() -> None:
    raw = {"name": "S", "subjects": ["a", "b.*"], "placement": {"tags": ["x"]}, "max_msgs": 5,
           "description": "d", "metadata": {"k": "v"}}
    cfg = StreamConfig.from_json(raw)
    out = cfg.to_json()
    assert out["placement"] == {"tags": ["x"]} and out["description"] == "d"
    assert StreamConfig.from_json(out) == cfg
    assert cfg.same_as(StreamConfig.from_json(raw))
    assert not cfg.same_as(StreamConfig.from_json({**raw, "max_msgs": 6}))


def test_feature_flags_are_typed_fields_echoed_where_the_client_put_them() -> None:
    raw = {"name": "S", "placement": {"tags": ["x"]}, "allow_atomic": True, "zz": 1,
           "allow_batched": False, "persist_mode": "default", "allow_msg_schedules": True}
    cfg = StreamConfig.from_json(raw)
    assert (cfg.allow_atomic, cfg.allow_msg_schedules, cfg.allow_batched) == (True, True, False)
    assert not cfg.allow_msg_counter and cfg.persist_mode == "default" and not cfg.async_persist
    assert cfg.extra == {"placement": {"tags": ["x"]}, "zz": 1}
    out = cfg.to_json()
    # false flags and the default persist mode are left out (omitempty); the rest keep the order
    tail = [k for k in out if k in ("placement", "allow_atomic", "zz", "allow_msg_schedules",
                                    "allow_batched", "persist_mode")]
    assert tail == ["placement", "allow_atomic", "zz", "allow_msg_schedules"]
    assert StreamConfig.from_json(out).to_json() == out
    with pytest.raises(AttributeError):
        getattr(cfg, "allow_atomics")  # noqa: B009  # a typo is an error, not False


def test_flags_set_in_code_are_echoed_after_the_parsed_keys() -> None:
    cfg = replace(StreamConfig.from_json({"name": "S", "zz": 1}), allow_batched=True,
                  persist_mode="async")
    assert list(cfg.to_json())[-4:] == ["zz", "allow_batched", "persist_mode", "metadata"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"name": ""}, (500, 10052, "stream name is required and can not contain '.', '*', '>', '\\', '/'")),
        ({"name": "a.b"}, (500, 10052, "stream name is required and can not contain '.', '*', '>', '\\', '/'")),
        ({"name": "a b"}, (500, 10052, "stream name is required and can not contain '.', '*', '>', '\\', '/'")),
        ({"name": "a/b"}, (400, 10128, "Stream name can not contain path separators")),
        ({"name": "S", "subjects": ["a", "a.>", "b"]}, None),
        ({"name": "S", "subjects": ["a.*", "a.b"]}, (500, 10052, 'subject "a.*" overlaps with "a.b"')),
        ({"name": "S", "num_replicas": 3}, (500, 10074, "replicas > 1 not supported in non-clustered mode")),
        ({"name": "S", "subjects": ["a.>.b"]}, (500, 10052, "invalid subject")),
        ({"name": "S", "subjects": ["$JS.API.>"]},
         (500, 10052, "subjects that overlap with jetstream api require no-ack to be true")),
        ({"name": "S", "max_age": -1}, (500, 10052, "max age can not be negative")),
        ({"name": "S", "num_replicas": -1}, (400, 10133, "replicas count cannot be negative")),
        ({"name": "S", "discard_new_per_subject": True, "discard": "new"},
         (500, 10052, "discard new per subject requires max msgs per subject > 0")),
        ({"name": "S", "retention": "forever"}, (400, 10025, 'invalid JSON: can not unmarshal "\\"forever\\""')),
        ({"name": "S", "max_msgs": "ten"}, (400, 10025, "invalid JSON: field 'max_msgs' must be a number, got 'ten'")),
        ({"name": "S", "mirror": {"name": "O"}, "subjects": ["a"]},
         (400, 10034, "stream mirrors can not contain subjects")),
        ({"name": "S", "sources": [{"name": "O"}, {"name": "O"}]},
         (400, 10140, "duplicate source configuration detected")),
        ({"name": "S", "subjects": ["x.>"], "republish": {"src": ">", "dest": "x.>"}},
         (500, 10052, "stream configuration for republish destination forms a cycle")),
        ([1, 2], (400, 10025, "invalid JSON: stream config must be a JSON object")),
    ],
)
def test_invalid(raw: Any, expected: tuple[int, int, str] | None) -> None:
    if expected is None:
        StreamConfig.from_json(raw)  # valid: "a" and "a.>" do not overlap
    else:
        assert err(raw) == expected


def test_update_rules() -> None:
    base = StreamConfig.from_json({"name": "S", "deny_purge": True})
    with pytest.raises(ApiError, match="can not change storage type"):
        base.check_update(StreamConfig.from_json({"name": "S", "storage": "memory", "deny_purge": True}))
    with pytest.raises(ApiError, match="can not cancel deny purge"):
        base.check_update(StreamConfig.from_json({"name": "S"}))
    base.check_update(StreamConfig.from_json({"name": "S", "deny_purge": True, "max_msgs": 3}))


@pytest.mark.parametrize("value", [1e30, 5.0, 1 << 63, True])
def test_int_fields_decode_like_go(value: Any) -> None:
    assert err({"name": "S", "max_msgs": value})[:2] == (400, 10025)
