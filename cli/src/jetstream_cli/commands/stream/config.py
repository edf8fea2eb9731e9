"""The stream configuration of `stream add` (natscli's prepareConfig: flags first, then,
without `--defaults`, natscli's questions in natscli's order for whatever was not given, then
its defaults: file storage, 1 replica, limits retention, discard old, no limits, 2m duplicate
window or max age if shorter) and of `stream edit` (natscli's copyAndEditStream: the flags
given, applied over the current configuration). `p` is the commands' flags by name."""

from __future__ import annotations

import json
from typing import Any

from ...errors import CliError
from ...jsapi import JsonDict
from ...prompts import ask_bytes, ask_input, ask_int, ask_select, confirm
from ...units import go_duration, parse_duration
from .._shared import load_json_file, parse_metadata

RETENTION = {"limits": "limits", "interest": "interest", "workq": "workqueue",
             "work": "workqueue", "work queue": "workqueue", "workqueue": "workqueue"}
STORAGE = {"file": "file", "f": "file", "memory": "memory", "m": "memory"}


def _split_subjects(values: tuple[str, ...] | list[str]) -> list[str]:
    result: list[str] = []
    for value in values:
        result.extend(v for v in value.replace(",", " ").split() if v)
    return result


def _source(value: str) -> JsonDict:
    text = value.strip()
    if text.startswith("{") and text.endswith("}"):
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise CliError(f"invalid stream source {value!r}: {exc}") from exc
        if not isinstance(parsed, dict):
            raise CliError(f"invalid stream source {value!r}")
        return parsed
    return {"name": text}


def prepare_config(p: dict[str, Any], require_size: bool) -> JsonDict:
    """The stream configuration for `stream add`, asking natscli's questions for what the
    flags leave open (unless `--defaults`)."""
    if p["config"]:
        loaded = load_json_file(p["config"], "configuration")
        if p["stream"]:
            loaded["name"] = p["stream"]
        if p["subjects"]:
            loaded["subjects"] = _split_subjects(p["subjects"])
        if p["description"]:
            loaded["description"] = p["description"]
        if p["replicas"]:
            loaded["num_replicas"] = p["replicas"]
        if not loaded.get("name"):
            raise CliError("the configuration has no stream name")
        return loaded

    defaults = p["defaults"]
    name = p["stream"] or ask_input("Stream Name", required=True)
    subjects = _split_subjects(p["subjects"])
    if not p["mirror"] and not p["source"] and not subjects:
        subjects = _split_subjects([ask_input("Subjects", required=True)])
    if p["mirror"] and subjects:
        raise CliError("mirrors cannot listen for messages on subjects")

    storage, replicas = p["storage"], p["replicas"]
    retention, discard = p["retention"], p["discard"]
    max_msgs, max_per_subject = p["max_msgs"], p["max_msgs_per_subject"]
    max_bytes, max_age, max_msg_size = p["max_bytes"], p["max_age"], p["max_msg_size"]
    if defaults:
        storage = storage or "file"
        replicas = replicas or 1
        retention = retention or "limits"
        discard = discard or "old"
        max_msgs = max_msgs or -1
        max_per_subject = max_per_subject or -1
        if max_bytes is None:
            max_bytes = 256 * 1024 * 1024 if require_size else -1
        if max_age is None:
            max_age = -1
        if max_msg_size is None:
            max_msg_size = -1

    if not storage:
        storage = ask_select("Storage", ["file", "memory"], "file")
    if not replicas:
        replicas = ask_int("Replication", "1")
    if replicas <= 0:
        raise CliError("replicas should be >= 1")
    if not retention:
        retention = ask_select("Retention Policy", ["Limits", "Interest", "Work Queue"], "Limits")
    if not discard:
        discard = ask_select("Discard Policy", ["New", "Old"], "Old")
    if not max_msgs:
        max_msgs = ask_int("Stream Messages Limit", "-1")
    max_msgs = -1 if max_msgs <= 0 else max_msgs
    if not max_per_subject and subjects:
        max_per_subject = ask_int("Per Subject Messages Limit", "-1")
    max_per_subject = -1 if not max_per_subject or max_per_subject <= 0 else max_per_subject
    if max_bytes is None or max_bytes == 0:
        max_bytes = ask_bytes("Total Stream Size", "256MB" if require_size else "-1")
    max_bytes = -1 if max_bytes <= 0 else max_bytes
    if max_age is None:
        answer = ask_input("Message TTL", "-1")
        max_age = -1 if answer == "-1" else parse_duration(answer)
    max_age = 0 if max_age < 0 else max_age
    if max_msg_size is None or max_msg_size == 0:
        max_msg_size = ask_bytes("Max Message Size", "-1")
    max_msg_size = -1 if max_msg_size <= 0 else max_msg_size
    if max_msg_size > 2**31 - 1:
        raise CliError(f"max value size {max_msg_size:,} is too big maximum is {2**31 - 1:,}")

    dupe_window = p["dupe_window"]
    if dupe_window is None and not p["mirror"]:
        default_window = 2 * 60 * 10**9
        if 0 < max_age < default_window:
            default_window = max_age
        if defaults:
            dupe_window = default_window
        else:
            dupe_window = parse_duration(
                ask_input("Duplicate tracking time window", go_duration(default_window)))

    allow_rollup, deny_delete, deny_purge = p["allow_rollup"], p["deny_delete"], p["deny_purge"]
    if not defaults:
        if allow_rollup is None:
            allow_rollup = confirm("Allow message Roll-ups", False)
        if deny_delete is None:
            deny_delete = not confirm("Allow message deletion", True)
        if deny_purge is None:
            deny_purge = not confirm("Allow purging subjects or the entire stream", True)

    cfg: JsonDict = {
        "name": name,
        "subjects": subjects,
        "retention": RETENTION[retention.lower()],
        "max_consumers": p["max_consumers"],
        "max_msgs_per_subject": max_per_subject,
        "max_msgs": max_msgs,
        "max_bytes": max_bytes,
        "max_age": max_age,
        "max_msg_size": max_msg_size,
        "storage": STORAGE[storage.lower()],
        "discard": discard.lower(),
        "num_replicas": replicas,
        "duplicate_window": dupe_window or 0,
        "compression": p["compression"] or "none",
        "sealed": False,
        "deny_delete": bool(deny_delete),
        "deny_purge": bool(deny_purge),
        "allow_rollup_hdrs": bool(allow_rollup),
        "allow_direct": p["allow_direct"] is not False,
        "mirror_direct": bool(p["allow_mirror_direct"]),
    }
    if p["description"]:
        cfg["description"] = p["description"]
    if not p["ack"]:
        cfg["no_ack"] = True
    if p["first_sequence"]:
        cfg["first_seq"] = p["first_sequence"]
    if p["discard_per_subject"]:
        cfg["discard_new_per_subject"] = True
    for flag, key in (("allow_msg_ttl", "allow_msg_ttl"), ("allow_schedules", "allow_msg_schedules"),
                      ("allow_batch", "allow_atomic"), ("allow_counter", "allow_msg_counter")):
        if p[flag]:
            cfg[key] = True
    if p["subject_del_markers_ttl"]:
        cfg["subject_delete_marker_ttl"] = p["subject_del_markers_ttl"]
    limits: JsonDict = {}
    if p["limit_consumer_inactive"]:
        limits["inactive_threshold"] = p["limit_consumer_inactive"]
    if p["limit_consumer_max_pending"]:
        limits["max_ack_pending"] = p["limit_consumer_max_pending"]
    if limits:
        cfg["consumer_limits"] = limits
    if p["metadata"]:
        cfg["metadata"] = parse_metadata(p["metadata"])
    if p["cluster"] or p["tag"]:
        cfg["placement"] = {k: v for k, v in (("cluster", p["cluster"]), ("tags", list(p["tag"])))
                            if v}
    if p["mirror"]:
        cfg["mirror"] = _source(p["mirror"])
    if p["source"]:
        cfg["sources"] = [_source(s) for s in p["source"]]
    if p["republish_source"] and p["republish_destination"]:
        cfg["republish"] = {"src": p["republish_source"], "dest": p["republish_destination"],
                            "headers_only": bool(p["republish_headers"])}
    if p["transform_source"] and p["transform_destination"]:
        cfg["subject_transform"] = {"src": p["transform_source"],
                                    "dest": p["transform_destination"]}
    if not cfg["subjects"]:
        del cfg["subjects"]
    return cfg


def edit_config(cfg: JsonDict, p: dict[str, Any]) -> JsonDict:
    """natscli's copyAndEditStream: the flags given, applied over the current config."""
    if p["config"]:
        new = load_json_file(p["config"], "configuration")
        new.setdefault("name", cfg["name"])
        return new
    new = json.loads(json.dumps(cfg))
    if p["source"] or p["mirror"]:
        raise CliError("cannot edit mirrors, or sources using the CLI, use --config instead")
    if not p["ack"]:
        new["no_ack"] = True
    elif "no_ack" in new:
        new["no_ack"] = False
    if p["discard"]:
        new["discard"] = p["discard"]
    if p["subjects"]:
        new["subjects"] = _split_subjects(p["subjects"])
    if p["retention"]:
        new["retention"] = RETENTION[p["retention"]]
    for flag, key in (("max_bytes", "max_bytes"), ("max_msgs", "max_msgs"),
                      ("max_msgs_per_subject", "max_msgs_per_subject"),
                      ("max_msg_size", "max_msg_size")):
        if p[flag]:
            new[key] = p[flag]
    if p["max_age"] is not None:
        new["max_age"] = max(p["max_age"], 0)
    if p["max_consumers"] != -1:
        new["max_consumers"] = p["max_consumers"]
    if p["dupe_window"] is not None:
        new["duplicate_window"] = p["dupe_window"]
    if p["replicas"]:
        new["num_replicas"] = p["replicas"]
    if p["description"]:
        new["description"] = p["description"]
    for flag, key in (("allow_rollup", "allow_rollup_hdrs"), ("deny_purge", "deny_purge"),
                      ("deny_delete", "deny_delete"), ("allow_direct", "allow_direct"),
                      ("allow_mirror_direct", "mirror_direct"),
                      ("allow_schedules", "allow_msg_schedules"), ("allow_batch", "allow_atomic"),
                      ("allow_counter", "allow_msg_counter"),
                      ("discard_per_subject", "discard_new_per_subject")):
        if p[flag] is not None:
            new[key] = p[flag]
    if p["allow_msg_ttl"]:
        new["allow_msg_ttl"] = True
    if p["metadata"]:
        new["metadata"] = parse_metadata(p["metadata"])
    if p["compression"]:
        new["compression"] = p["compression"]
    if p["cluster"] or p["tag"]:
        new["placement"] = {k: v for k, v in (("cluster", p["cluster"]), ("tags", list(p["tag"])))
                            if v}
    if not p["no_republish"] and p["republish_source"] and p["republish_destination"]:
        new["republish"] = {"src": p["republish_source"], "dest": p["republish_destination"],
                            "headers_only": bool(p["republish_headers"])}
    if p["no_republish"]:
        new.pop("republish", None)
    if p["no_transform"]:
        new.pop("subject_transform", None)
    elif p["transform_source"] and p["transform_destination"]:
        new["subject_transform"] = {"src": p["transform_source"],
                                    "dest": p["transform_destination"]}
    if p["subject_del_markers_ttl"] is not None:
        new["subject_delete_marker_ttl"] = p["subject_del_markers_ttl"]
    if p["no_mirror"]:
        new.pop("mirror", None)
    return new
