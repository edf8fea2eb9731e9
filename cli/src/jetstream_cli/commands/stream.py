"""`jetstream stream ...`: natscli's stream verbs (add, ls, info, edit, rm, purge, get, view,
report, backup, restore, state, rmm) with its flags, questions and output.

`stream add` builds the configuration the way natscli does: flags first, then (without
`--defaults`) natscli's questions in natscli's order for whatever was not given, then its
defaults (`--defaults`: file storage, 1 replica, limits retention, discard old, no limits,
2m duplicate window or max age if shorter). Output: `Stream X was created` and the stream
information in natscli's columns; `--json` prints the server's stream info instead.
"""

from __future__ import annotations

import base64
import difflib
import json
import time
from typing import Any

import click

from .. import snapshot
from ..errors import STREAM_NOT_FOUND, ApiError, CliError
from ..jsapi import JsonDict
from ..prompts import ask_bytes, ask_input, ask_int, ask_select, confirm
from ..render import Columns, Nanos, Table, cell, to_json
from ..session import Session, connection_options, group_with_aliases, log, out, run
from ..units import go_duration, ibytes, parse_duration, parse_time
from ._shared import (
    BYTES,
    DURATION,
    api_level,
    choose,
    is_internal_stream,
    load_json_file,
    parse_metadata,
    render_cluster,
    render_meta_api,
    since_ns,
)

RETENTION = {"limits": "limits", "interest": "interest", "workq": "workqueue",
             "work": "workqueue", "work queue": "workqueue", "workqueue": "workqueue"}
RETENTION_NAMES = {"limits": "Limits", "interest": "Interest", "workqueue": "WorkQueue"}
STORAGE = {"file": "file", "f": "file", "memory": "memory", "m": "memory"}
STORAGE_NAMES = {"file": "File", "memory": "Memory"}
DISCARD_NAMES = {"old": "Old", "new": "New"}
NEVER = 2**63 - 1


# -- showing a stream --------------------------------------------------------

def _source_text(source: JsonDict | None) -> str:
    if not source:
        return ""
    parts = [str(source.get("name", ""))]
    if source.get("opt_start_seq"):
        parts.append(f"Start Seq: {source['opt_start_seq']:,}")
    if source.get("opt_start_time"):
        parts.append(f"Start Time: {source['opt_start_time']}")
    external = source.get("external") or {}
    if external.get("api"):
        parts.append(f"API Prefix: {external['api']}")
    if external.get("deliver"):
        parts.append(f"Delivery Prefix: {external['deliver']}")
    return ", ".join(parts)


def _show_config(cols: Columns, cfg: JsonDict) -> None:
    cols.row_if_not_empty("Description", cfg.get("description"))
    cols.row_if("Subjects", cfg.get("subjects") or [], bool(cfg.get("subjects")))
    cols.row("Replicas", int(cfg.get("num_replicas") or 1))
    cols.row_if("Sealed", True, bool(cfg.get("sealed")))
    cols.row("Storage", STORAGE_NAMES.get(str(cfg.get("storage")), str(cfg.get("storage"))))
    if cfg.get("compression") == "s2":
        cols.row("Compression", "S2 Compression")
    if cfg.get("first_seq"):
        cols.row("First Sequence", int(cfg["first_seq"]))
    placement = cfg.get("placement") or {}
    cols.row_if_not_empty("Placement Cluster", placement.get("cluster"))
    cols.row_if("Placement Tags", placement.get("tags") or [], bool(placement.get("tags")))

    cols.title("Options")
    transform = cfg.get("subject_transform") or {}
    if transform.get("dest"):
        cols.row("Subject Transform", f"{transform.get('src') or '>'} to {transform['dest']}")
    republish = cfg.get("republish")
    if republish:
        label = "Republishing Headers" if republish.get("headers_only") else "Republishing"
        cols.row(label, f"{republish.get('src')} to {republish.get('dest')}")
    cols.row("Retention", RETENTION_NAMES.get(str(cfg.get("retention")), str(cfg.get("retention"))))
    cols.row("Acknowledgments", not cfg.get("no_ack", False))
    discard = DISCARD_NAMES.get(str(cfg.get("discard")), str(cfg.get("discard")))
    cols.row("Discard Policy", "New Per Subject" if cfg.get("discard_new_per_subject") else discard)
    cols.row("Duplicate Window", Nanos(int(cfg.get("duplicate_window") or 0)))
    cols.row_if("Direct Get", True, bool(cfg.get("allow_direct")))
    cols.row_if("Mirror Direct Get", True, bool(cfg.get("mirror_direct")))
    cols.row("Allows Atomic Batch Publish", bool(cfg.get("allow_atomic")))
    cols.row("Allows Fast Batch Publish", bool(cfg.get("allow_batched")))
    cols.row("Allows Counters", bool(cfg.get("allow_msg_counter")))
    cols.row("Allows Msg Delete", not cfg.get("deny_delete", False))
    cols.row("Allows Per-Message TTL", bool(cfg.get("allow_msg_ttl")))
    cols.row("Allows Purge", not cfg.get("deny_purge", False))
    cols.row("Allows Schedules", bool(cfg.get("allow_msg_schedules")))
    marker_ttl = int(cfg.get("subject_delete_marker_ttl") or 0)
    if cfg.get("allow_msg_ttl") and marker_ttl > 0:
        cols.row("Subject Delete Markers TTL", Nanos(marker_ttl))
    cols.row("Allows Rollups", bool(cfg.get("allow_rollup_hdrs")))

    cols.title("Limits")
    max_msgs = int(cfg.get("max_msgs", -1))
    cols.row("Maximum Messages", "unlimited" if max_msgs == -1 else max_msgs)
    per_subject = int(cfg.get("max_msgs_per_subject", -1))
    cols.row("Maximum Per Subject", "unlimited" if per_subject <= 0 else per_subject)
    max_bytes = int(cfg.get("max_bytes", -1))
    cols.row("Maximum Bytes", "unlimited" if max_bytes == -1 else ibytes(max_bytes))
    max_age = int(cfg.get("max_age") or 0)
    cols.row("Maximum Age", "unlimited" if max_age <= 0 else Nanos(max_age))
    max_msg_size = int(cfg.get("max_msg_size", -1))
    cols.row("Maximum Message Size", "unlimited" if max_msg_size == -1 else ibytes(max_msg_size))
    max_consumers = int(cfg.get("max_consumers", -1))
    cols.row("Maximum Consumers", "unlimited" if max_consumers == -1 else max_consumers)
    limits = cfg.get("consumer_limits") or {}
    inactive = int(limits.get("inactive_threshold") or 0)
    cols.row_if("Consumer Inactive Threshold", Nanos(inactive), inactive > 0)
    max_ack = int(limits.get("max_ack_pending") or 0)
    cols.row_if("Consumer Max Ack Pending", max_ack, max_ack > 0)

    metadata = {k: v for k, v in (cfg.get("metadata") or {}).items() if not k.startswith("_nats")}
    if metadata:
        cols.title("Metadata")
        cols.map_strings(metadata)
    if cfg.get("mirror") or cfg.get("sources"):
        cols.title("Replication")
    if cfg.get("mirror"):
        cols.row("Mirror", _source_text(cfg["mirror"]))
    for i, source in enumerate(sorted(cfg.get("sources") or [], key=lambda s: s.get("name", ""))):
        cols.row("Sources" if i == 0 else "", _source_text(source))
    cols.line()


def _show_source_info(cols: Columns, source: JsonDict) -> None:
    cols.row("Stream Name", source.get("name", ""))
    if source.get("filter_subject"):
        cols.row("Subject Filter", source["filter_subject"])
    else:
        transforms = source.get("subject_transforms") or []
        for i, transform in enumerate(transforms):
            label = ""
            if i == 0:
                label = ("Subject Filters and Transforms" if len(transforms) > 1
                         else "Subject Filter and Transform")
            if transform.get("dest"):
                cols.row(label, f"{transform.get('src')} to {transform['dest']}")
            else:
                cols.row(label, f"{transform.get('src')} untransformed")
    cols.row("Lag", int(source.get("lag") or 0))
    active = int(source.get("active") or 0)
    cols.row("Last Seen", Nanos(active) if 0 < active < NEVER else "never")
    if source.get("error"):
        cols.row("Error", source["error"].get("description", ""))


def format_stream_info(info: JsonDict, state_only: bool = False) -> str:
    """natscli's `stream info` text for a stream info answer."""
    cfg = info.get("config") or {}
    name = cfg.get("name", "")
    created = parse_time(info.get("created"))
    created_text = created.local() if created else ""
    if state_only:
        cols = Columns(f"State for Stream {name} created {created_text}")
    else:
        cols = Columns(f"Information for Stream {name} created {created_text}")
        _show_config(cols, cfg)
    cluster = info.get("cluster") or {}
    if cluster.get("name"):
        cols.title("Cluster Information")
        cols.row("Name", cluster["name"])
        cols.row_if_not_empty("Cluster Group", cluster.get("raft_group"))
        cols.row("Leader", cluster.get("leader", ""))
        for replica in cluster.get("replicas") or []:
            health = [replica.get("name", ""), "current" if replica.get("current") else "outdated"]
            if replica.get("offline"):
                health.append("OFFLINE")
            cols.row("Replica", health)
        cols.line()
    if info.get("mirror"):
        cols.title("Mirror Information")
        _show_source_info(cols, info["mirror"])
    if info.get("sources"):
        cols.title("Source Information")
        for source in info["sources"]:
            _show_source_info(cols, source)
            cols.line()
    state = info.get("state") or {}
    cols.title("State")
    render_meta_api(cols, cfg.get("metadata"))
    cols.row("Messages", int(state.get("messages") or 0))
    cols.row("Bytes", ibytes(int(state.get("bytes") or 0)))
    lost = state.get("lost") or {}
    if lost.get("msgs"):
        cols.row("Lost Messages", f"{len(lost['msgs']):,} ({ibytes(int(lost.get('bytes') or 0))})")
    for label, seq_key, ts_key in (("First Sequence", "first_seq", "first_ts"),
                                   ("Last Sequence", "last_seq", "last_ts")):
        seq = int(state.get(seq_key) or 0)
        moment = parse_time(state.get(ts_key))
        if moment is None or moment.is_zero:
            cols.row(label, seq)
        else:
            cols.row(label, f"{seq:,} @ {moment.local()}")
    deleted = len(state.get("deleted") or []) or int(state.get("num_deleted") or 0)
    cols.row_if("Deleted Messages", deleted, deleted > 0)
    cols.row("Active Consumers", int(state.get("consumer_count") or 0))
    subjects = int(state.get("num_subjects") or 0)
    cols.row_if("Number of Subjects", subjects, subjects > 0)
    return cols.render()


def show_stream_info(info: JsonDict, as_json: bool, state_only: bool = False) -> None:
    if as_json:
        out(to_json(info))
    else:
        click.echo(format_stream_info(info, state_only), nl=False)


# -- building a configuration (natscli's prepareConfig) ---------------------

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


def config_diff(old: JsonDict, new: JsonDict) -> str:
    """A unified diff of two configurations (subject lists compared as sets)."""
    def normal(cfg: JsonDict) -> list[str]:
        copy = dict(cfg)
        if isinstance(copy.get("subjects"), list):
            copy["subjects"] = sorted(copy["subjects"])
        copy["metadata"] = {k: v for k, v in (copy.get("metadata") or {}).items()
                            if not k.startswith("_nats")} or None
        if copy["metadata"] is None:
            del copy["metadata"]
        return json.dumps(copy, indent=2, sort_keys=True).splitlines()

    lines = difflib.unified_diff(normal(old), normal(new), "old", "new", lineterm="", n=1)
    return "\n".join(list(lines)[2:])


# -- the click commands ------------------------------------------------------

def _create_flags(edit: bool):  # type: ignore[no-untyped-def]
    """natscli's addCreateFlags: the same flags on `add` and `edit` (some only on add)."""
    def flag_pair(name: str, help_text: str):  # type: ignore[no-untyped-def]
        return click.option(f"--{name}/--no-{name}", name.replace("-", "_"), default=None,
                            help=help_text)

    decorators = [
        click.option("--subjects", multiple=True, help="Subjects that are consumed by the stream"),
        click.option("--description", help="Sets a contextual description for the stream"),
        click.option("--compression", type=click.Choice(["none", "s2"]),
                     help="Compression algorithm to use (file storage only)"),
        click.option("--replicas", type=int, default=0,
                     help="When clustered, how many replicas of the data to create"),
        click.option("--tag", multiple=True, help="Place the stream on servers that has specific tags"),
        click.option("--cluster", help="Place the stream on a specific cluster"),
        click.option("--ack/--no-ack", default=True, help="Acknowledge publishes"),
        click.option("--retention", type=click.Choice(["limits", "interest", "workq", "work"]),
                     help="Defines a retention policy (limits, interest, work)"),
        click.option("--discard", type=click.Choice(["new", "old"]),
                     help="Defines the discard policy (new, old)"),
        flag_pair("discard-per-subject",
                  "Sets the 'new' discard policy and applies it to every subject in the stream"),
        click.option("--max-age", type=DURATION, default=None,
                     help="Maximum age of messages to keep"),
        click.option("--max-bytes", type=BYTES, default=None, help="Maximum bytes to keep"),
        click.option("--max-consumers", type=int, default=-1,
                     help="Maximum number of consumers to allow"),
        click.option("--max-msg-size", type=BYTES, default=None,
                     help="Maximum size any 1 message may be"),
        click.option("--max-msgs", type=int, default=0, help="Maximum amount of messages to keep"),
        click.option("--max-msgs-per-subject", type=int, default=0,
                     help="Maximum amount of messages to keep per subject"),
        click.option("--dupe-window", type=DURATION, default=None,
                     help="Duration of the duplicate message tracking window"),
        click.option("--mirror", help="Completely mirror another stream"),
        click.option("--source", multiple=True, metavar="STREAM",
                     help="Source data from other streams, merging into this one"),
        flag_pair("allow-batch", "Allow atomic batch publishing"),
        flag_pair("allow-counter", "Configures the stream as a distributed counter"),
        flag_pair("allow-rollup", "Allows roll-ups to be done by publishing messages with special headers"),
        flag_pair("deny-delete", "Deny messages from being deleted via the API"),
        flag_pair("deny-purge", "Deny entire stream or subject purges via the API"),
        flag_pair("allow-direct", "Allows fast, direct, access to stream data via the direct get API"),
        flag_pair("allow-mirror-direct", "Allows fast, direct, access to stream data via the direct get API on mirrors"),
        click.option("--allow-msg-ttl", is_flag=True, help="Allows per-message TTL handling"),
        flag_pair("allow-schedules", "Allows message schedules"),
        click.option("--subject-del-markers-ttl", type=DURATION, default=None,
                     help="How long delete markers should persist in the stream"),
        click.option("--transform-source", help="Stream subject transform source"),
        click.option("--transform-destination", help="Stream subject transform destination"),
        click.option("--metadata", multiple=True, metavar="META", help="Adds metadata to the stream"),
        click.option("--republish-source", help="Republish messages to --republish-destination"),
        click.option("--republish-destination",
                     help="Republish destination for messages in --republish-source"),
        click.option("--republish-headers", is_flag=True,
                     help="Republish only message headers, no bodies"),
        click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output"),
        click.option("--config", type=click.Path(exists=True, dir_okay=False),
                     help="JSON file to read configuration from"),
    ]
    if not edit:
        decorators += [
            click.option("--storage", type=click.Choice(["file", "f", "memory", "m"]),
                         help="Storage backend to use (file, memory)"),
            click.option("--first-sequence", type=int, default=0, help="Sets the starting sequence"),
            click.option("--limit-consumer-inactive", type=DURATION, default=None,
                         help="The maximum Consumer inactive threshold the stream allows"),
            click.option("--limit-consumer-max-pending", type=int, default=0,
                         help="The maximum Consumer Ack Pending the stream Allows"),
            click.option("--output", type=click.Path(dir_okay=False),
                         help="Save configuration instead of creating"),
            click.option("--defaults", is_flag=True, help="Accept default values for all prompts"),
        ]
    else:
        decorators += [
            click.option("--no-mirror", is_flag=True, help="Removes current mirror configuration"),
            click.option("--no-transform", is_flag=True,
                         help="Removes current subject transform configuration"),
            click.option("--no-republish", is_flag=True,
                         help="Removes current republish configuration"),
            click.option("-f", "--force", is_flag=True, help="Force edit without prompting"),
            click.option("--dry-run", is_flag=True,
                         help="Only shows differences, do not edit the stream"),
        ]

    def apply(func):  # type: ignore[no-untyped-def]
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


async def _stream_exists(s: Session, name: str) -> JsonDict:
    try:
        return await s.js.stream_info(name)
    except ApiError as exc:
        if exc.err_code == STREAM_NOT_FOUND:
            raise CliError(f"stream {name!r} not found") from exc
        raise


async def _pick_stream(s: Session, name: str | None, show_all: bool) -> str:
    if name:
        return name
    names = [n for n in await s.js.stream_names() if show_all or not is_internal_stream(n)]
    return choose("stream", None, names)


def register(cli: click.Group) -> None:
    @group_with_aliases(cli, "stream", {"create": "add", "new": "add", "list": "ls", "l": "ls",
                                         "nfo": "info", "i": "info", "update": "edit",
                                         "delete": "rm", "del": "rm", "snapshot": "backup"})
    @click.option("-a", "--all", "show_all", is_flag=True,
                  help="When listing or selecting streams show all streams including system ones")
    @click.pass_context
    def stream(ctx: click.Context, show_all: bool) -> None:
        """JetStream stream management"""
        ctx.meta["stream.all"] = show_all

    @stream.command("add")
    @click.argument("stream_name", metavar="STREAM", required=False)
    @_create_flags(edit=False)
    @connection_options()
    @click.pass_context
    def add(ctx: click.Context, stream_name: str | None, **p: Any) -> None:
        """Create a new stream"""
        p["stream"] = stream_name
        for key in ("no_mirror", "no_transform", "no_republish"):
            p.setdefault(key, False)

        async def work(s: Session) -> None:
            limits = (await s.js.account_info()).get("limits") or {}
            cfg = prepare_config(p, bool(limits.get("max_bytes_required")))
            if p["output"]:
                with open(p["output"], "w") as handle:
                    handle.write(to_json(cfg))
                return
            info = await s.js.stream_create(cfg)
            if not p["as_json"]:
                out(f"Stream {cfg['name']} was created\n")
            show_stream_info(info, p["as_json"])

        run(ctx, work)

    @stream.command("ls")
    @click.option("-a", "--all", "show_all", is_flag=True,
                  help="When listing or selecting streams show all streams including system ones")
    @click.option("--subject", help="Limit the list to streams with matching subjects")
    @click.option("-n", "--names", is_flag=True, help="Show just the stream names")
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @connection_options()
    @click.pass_context
    def ls(ctx: click.Context, show_all: bool, subject: str | None, names: bool,
           as_json: bool) -> None:
        """List all known streams"""
        show_all = show_all or bool(ctx.meta.get("stream.all"))

        async def work(s: Session) -> None:
            if names:
                listed = await s.js.stream_names(subject)
                out(to_json(listed) if as_json else "\n".join(listed))
                return
            infos = await s.js.stream_list(subject)
            shown = [i for i in infos if show_all or not is_internal_stream(i["config"]["name"])]
            if as_json:
                out(to_json([i["config"]["name"] for i in shown]))
                return
            if not shown:
                out("No Streams defined, pass -a to include system streams" if infos
                    else "No Streams defined")
                return
            shown.sort(key=lambda i: int((i.get("state") or {}).get("bytes") or 0))
            title = f"Streams matching {subject}" if subject else "Streams"
            table = Table(title, ["Name", "Description", "Created", "Messages", "Size",
                                  "Last Message"])
            for info in shown:
                cfg, state = info["config"], info.get("state") or {}
                created = parse_time(info.get("created"))
                table.add_row(cfg["name"], cfg.get("description", ""),
                              created.local() if created else "",
                              f"{int(state.get('messages') or 0):,}",
                              ibytes(int(state.get("bytes") or 0)),
                              Nanos(since_ns(info, state.get("last_ts"))))
            table_text = table.render()
            out(table_text)
            out()

        run(ctx, work)

    @stream.command("info")
    @click.argument("stream_name", metavar="STREAM", required=False)
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @click.option("--state", "state_only", is_flag=True, help="Shows only the stream state")
    @connection_options()
    @click.pass_context
    def info(ctx: click.Context, stream_name: str | None, as_json: bool, state_only: bool) -> None:
        """Stream information"""
        show_all = bool(ctx.meta.get("stream.all"))

        async def work(s: Session) -> None:
            name = await _pick_stream(s, stream_name, show_all)
            show_stream_info(await _stream_exists(s, name), as_json, state_only)
            if not as_json:
                out()

        run(ctx, work)

    @stream.command("state")
    @click.argument("stream_name", metavar="STREAM", required=False)
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @connection_options()
    @click.pass_context
    def state(ctx: click.Context, stream_name: str | None, as_json: bool) -> None:
        """Stream state"""
        ctx.invoke(info, stream_name=stream_name, as_json=as_json, state_only=True)

    @stream.command("edit")
    @click.argument("stream_name", metavar="STREAM", required=False)
    @_create_flags(edit=True)
    @connection_options()
    @click.pass_context
    def edit(ctx: click.Context, stream_name: str | None, **p: Any) -> None:
        """Edits an existing stream"""
        show_all = bool(ctx.meta.get("stream.all"))

        async def work(s: Session) -> int:
            name = await _pick_stream(s, stream_name, show_all)
            current = (await _stream_exists(s, name))["config"]
            new = edit_config(current, p)
            diff = config_diff(current, new)
            if not diff:
                if not p["dry_run"]:
                    out("No difference in configuration")
                return 0
            out(f"Differences (-old +new):\n{diff}")
            if p["dry_run"]:
                return 1
            if not p["force"] and not confirm(f"Really edit Stream {name}", False):
                return 0
            updated = await s.js.stream_update(new)
            if not p["as_json"]:
                out(f"Stream {name} was updated\n")
            show_stream_info(updated, p["as_json"])
            return 0

        run(ctx, work)

    @stream.command("rm")
    @click.argument("stream_name", metavar="STREAM", required=False)
    @click.option("-f", "--force", is_flag=True, help="Force removal without prompting")
    @connection_options()
    @click.pass_context
    def rm(ctx: click.Context, stream_name: str | None, force: bool) -> None:
        """Removes a stream"""
        if force and not stream_name:
            raise CliError("--force requires a stream name")
        show_all = bool(ctx.meta.get("stream.all"))

        async def work(s: Session) -> None:
            name = await _pick_stream(s, stream_name, show_all)
            if not force:
                await _stream_exists(s, name)
                if not confirm(f"Really delete Stream {name}", False):
                    return
            try:
                await s.js.stream_delete(name)
            except ApiError as exc:
                if exc.err_code == STREAM_NOT_FOUND:
                    raise CliError(f"stream {name!r} not found") from exc
                raise

        run(ctx, work)

    @stream.command("purge")
    @click.argument("stream_name", metavar="STREAM", required=False)
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @click.option("-f", "--force", is_flag=True, help="Force removal without prompting")
    @click.option("--subject", help="Limits the purge to a specific subject")
    @click.option("--seq", type=int, default=0,
                  help="Purge up to but not including a specific message sequence")
    @click.option("--keep", type=int, default=0,
                  help="Keeps a certain number of messages after the purge")
    @connection_options()
    @click.pass_context
    def purge(ctx: click.Context, stream_name: str | None, as_json: bool, force: bool,
              subject: str | None, seq: int, keep: int) -> None:
        """Bulk removes messages from a stream"""
        show_all = bool(ctx.meta.get("stream.all"))
        if seq and keep:
            raise CliError("sequence and keep cannot be combined when purging")

        async def work(s: Session) -> None:
            name = await _pick_stream(s, stream_name, show_all)
            await _stream_exists(s, name)
            if not force and not confirm(f"Really purge Stream {name}", False):
                return
            body: JsonDict | None = None
            if keep or subject or seq:
                body = {k: v for k, v in (("filter", subject), ("seq", seq), ("keep", keep)) if v}
            answer = await s.js.stream_purge(name, body)
            if not as_json:
                out(f"Purged {int(answer.get('purged') or 0)} messages from {name}\n")
            show_stream_info(await s.js.stream_info(name), as_json, state_only=True)

        run(ctx, work)

    @stream.command("get")
    @click.argument("stream_name", metavar="STREAM", required=False)
    @click.argument("seq", metavar="ID", type=int, required=False)
    @click.option("-S", "--last-for", "last_for", metavar="SUBJECT",
                  help="Retrieves the message for a specific subject")
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @connection_options()
    @click.pass_context
    def get(ctx: click.Context, stream_name: str | None, seq: int | None, last_for: str | None,
            as_json: bool) -> None:
        """Retrieves a specific message from a Stream"""
        show_all = bool(ctx.meta.get("stream.all"))

        async def work(s: Session) -> None:
            name = await _pick_stream(s, stream_name, show_all)
            wanted, subject = seq, last_for
            if wanted is None and not subject:
                wanted = int(ask_input("Message Sequence to retrieve", "-1", required=True))
                if wanted == -1:
                    subject = ask_input("Subject to retrieve last message for")
            await _stream_exists(s, name)
            if wanted is not None and wanted > -1:
                body: JsonDict = {"seq": wanted}
            elif subject:
                body = {"last_by_subj": subject}
            else:
                raise CliError("no ID or subject specified")
            try:
                message = await s.js.msg_get(name, body)
            except ApiError as exc:
                what = f"{name}#{wanted}" if wanted is not None and wanted > -1 else \
                    f"the last message of {name} for {subject}"
                raise CliError(f"could not retrieve {what}: {exc}") from exc
            if as_json:
                out(to_json(message))
                return
            out(format_stored_message(name, message))

        run(ctx, work)

    @stream.command("rmm")
    @click.argument("stream_name", metavar="STREAM", required=False)
    @click.argument("seq", metavar="ID", type=int, required=False)
    @click.option("-f", "--force", is_flag=True, help="Force removal without prompting")
    @connection_options()
    @click.pass_context
    def rmm(ctx: click.Context, stream_name: str | None, seq: int | None, force: bool) -> None:
        """Securely removes an individual message from a stream"""
        show_all = bool(ctx.meta.get("stream.all"))

        async def work(s: Session) -> None:
            name = await _pick_stream(s, stream_name, show_all)
            wanted = seq if seq is not None else int(
                ask_input("Message Sequence to remove", required=True))
            if wanted <= 0:
                raise CliError("positive message ID required")
            await _stream_exists(s, name)
            if not force and not confirm(
                    f"Really remove message {wanted} from Stream {name}", False):
                return
            await s.js.msg_delete(name, wanted)

        run(ctx, work)

    @stream.command("view")
    @click.argument("stream_name", metavar="STREAM", required=False)
    @click.argument("size", type=int, default=10, required=False)
    @click.option("--id", "start_id", type=int, default=0,
                  help="Start at a specific message Sequence")
    @click.option("--since", type=DURATION, default=None,
                  help="Delivers messages received since a duration like 1d3h5m2s")
    @click.option("--raw", is_flag=True, help="Show the raw data received")
    @click.option("--subject", help="Filter the stream using a subject")
    @connection_options()
    @click.pass_context
    def view(ctx: click.Context, stream_name: str | None, size: int, start_id: int,
             since: int | None, raw: bool, subject: str | None) -> None:
        """View messages in a stream"""
        show_all = bool(ctx.meta.get("stream.all"))
        if size > 25:
            log("Page size is limited to 25, setting to 25...")
            size = 25

        async def work(s: Session) -> None:
            name = await _pick_stream(s, stream_name, show_all)
            info = await _stream_exists(s, name)
            await view_stream(s, info, size, start_id, since, raw, subject)

        run(ctx, work)

    @stream.command("report")
    @click.option("--subject", help="Limit the report to streams with matching subjects")
    @click.option("--cluster", help="Limit report to streams within a specific cluster")
    @click.option("-o", "--consumers", "by_consumers", is_flag=True,
                  help="Sort by number of Consumers")
    @click.option("-m", "--messages", "by_messages", is_flag=True,
                  help="Sort by number of Messages")
    @click.option("-n", "--name", "by_name", is_flag=True, help="Sort by stream name")
    @click.option("-t", "--storage", "by_storage", is_flag=True, help="Sort by Storage type")
    @click.option("-r", "--raw", is_flag=True, help="Show un-formatted numbers")
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @connection_options()
    @click.pass_context
    def report(ctx: click.Context, subject: str | None, cluster: str | None, by_consumers: bool,
               by_messages: bool, by_name: bool, by_storage: bool, raw: bool,
               as_json: bool) -> None:
        """Reports on stream statistics"""

        async def work(s: Session) -> None:
            if not as_json:
                out("Obtaining Stream stats\n")
            infos = await s.js.stream_list(subject)
            if cluster:
                infos = [i for i in infos if (i.get("cluster") or {}).get("name") == cluster]
            stats = [stream_stat(i) for i in infos]
            if by_consumers:
                stats.sort(key=lambda r: r["consumers"])
            elif by_messages:
                stats.sort(key=lambda r: r["messages"])
            elif by_name:
                stats.sort(key=lambda r: r["stream"])
            elif by_storage:
                stats.sort(key=lambda r: r["storage"])
            else:
                stats.sort(key=lambda r: r["bytes"])
            if as_json:
                out(to_json(stats))
                return
            if not stats:
                out("No Streams defined")
                return
            out(render_stream_report(stats, raw))
            out()

        run(ctx, work)

    @stream.command("backup")
    @click.argument("stream_name", metavar="STREAM")
    @click.argument("target")
    @click.option("--progress/--no-progress", default=True,
                  help="Enables or disables progress reporting using a progress bar")
    @click.option("--check", is_flag=True, help="Checks the stream for health prior to backup")
    @click.option("--consumers/--no-consumers", default=True,
                  help="Enable or disable consumer backups")
    @click.option("--chunk-size", type=BYTES, default=None,
                  help="Sets a specific chunk size that the server will send")
    @click.option("--window-size", type=BYTES, default=None,
                  help="Sets a specific window size that the server will send")
    @connection_options()
    @click.pass_context
    def backup(ctx: click.Context, stream_name: str, target: str, progress: bool, check: bool,
               consumers: bool, chunk_size: int | None, window_size: int | None) -> None:
        """Creates a backup of a stream over the NATS network"""

        async def work(s: Session) -> None:
            info = await _stream_exists(s, stream_name)
            await snapshot.backup(s, info, target, consumers=consumers, check=check,
                                  chunk_size=chunk_size, window_size=window_size)

        run(ctx, work)

    @stream.command("restore")
    @click.argument("directory", metavar="FILE",
                    type=click.Path(exists=True, file_okay=False))
    @click.option("--progress/--no-progress", default=True,
                  help="Enables or disables progress reporting using a progress bar")
    @click.option("--config", type=click.Path(exists=True, dir_okay=False),
                  help="Load a different configuration when restoring the stream")
    @click.option("--cluster", help="Place the stream in a specific cluster")
    @click.option("--tag", multiple=True, help="Place the stream on servers that has specific tags")
    @click.option("--replicas", type=int, default=0,
                  help="Override how many replicas of the data to create")
    @connection_options()
    @click.pass_context
    def restore(ctx: click.Context, directory: str, progress: bool, config: str | None,
                cluster: str | None, tag: tuple[str, ...], replicas: int) -> None:
        """Restore a stream over the NATS network"""

        async def work(s: Session) -> None:
            override = load_json_file(config, "configuration") if config else None
            info = await snapshot.restore(s, directory, override, cluster, list(tag), replicas)
            show_stream_info(info, False)

        run(ctx, work)


def stream_stat(info: JsonDict) -> JsonDict:
    cfg, state = info.get("config") or {}, info.get("state") or {}
    lost = state.get("lost") or {}
    return {
        "stream": cfg.get("name", ""),
        "storage": STORAGE_NAMES.get(str(cfg.get("storage")), str(cfg.get("storage"))),
        "placement": cfg.get("placement"),
        "consumers": int(state.get("consumer_count") or 0),
        "messages": int(state.get("messages") or 0),
        "bytes": int(state.get("bytes") or 0),
        "lost_msgs": len(lost.get("msgs") or []),
        "lost_bytes": int(lost.get("bytes") or 0),
        "deleted": len(state.get("deleted") or []) or int(state.get("num_deleted") or 0),
        "api_level": api_level(cfg),
        "cluster": info.get("cluster"),
    }


def render_stream_report(stats: list[JsonDict], raw: bool) -> str:
    table = Table("Stream Report", ["Stream", "Storage", "Placement", "Consumers", "Messages",
                                    "Bytes", "Lost", "Deleted", "API Level", "Replicas"])
    for r in stats:
        placement = ""
        if r["placement"]:
            if r["placement"].get("cluster"):
                placement = f"cluster: {r['placement']['cluster']} "
            if r["placement"].get("tags"):
                placement += f"tags: {', '.join(r['placement']['tags'])}"
        lost = "0"
        if r["lost_msgs"]:
            lost = (f"{r['lost_msgs']} ({r['lost_bytes']})" if raw
                    else f"{r['lost_msgs']:,} ({ibytes(r['lost_bytes'])})")
        if raw:
            table.add_row(r["stream"], r["storage"], placement, r["consumers"], r["messages"],
                          r["bytes"], lost, r["deleted"], r["api_level"],
                          render_cluster(r["cluster"]))
        else:
            table.add_row(r["stream"], r["storage"], placement, f"{r['consumers']:,}",
                          f"{r['messages']:,}", ibytes(r["bytes"]), lost, f"{r['deleted']:,}",
                          r["api_level"], render_cluster(r["cluster"]))
    return table.render()


def decode_headers(raw: bytes) -> list[tuple[str, str]]:
    lines = raw.decode("utf-8", "replace").split("\r\n")
    result: list[tuple[str, str]] = []
    if lines and len(lines[0]) > len("NATS/1.0"):
        status = lines[0][len("NATS/1.0"):].strip()
        result.append(("Status", status[:3]))
        if status[3:].strip():
            result.append(("Description", status[3:].strip()))
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep and key:
            result.append((key, value.strip()))
    return result


def format_stored_message(stream: str, message: JsonDict) -> str:
    """natscli's `stream get` text for a stored message."""
    moment = parse_time(message.get("time"))
    when = moment.go_string() if moment else ""
    age = Nanos(moment.since(time.time_ns())) if moment else Nanos(0)
    lines = [f"Item: {stream}#{message.get('seq')} received {when} ({cell(age)}) on Subject "
             f"{message.get('subject')}", ""]
    if message.get("hdrs"):
        lines.append("Headers:")
        for key, value in decode_headers(base64.b64decode(message["hdrs"])):
            lines.append(f"  {key}: {value}")
        lines.append("")
    data = base64.b64decode(message.get("data") or "")
    lines.append(body_text(data))
    return "\n".join(lines) + "\n"


def body_text(data: bytes) -> str:
    """natscli's outPutMSGBody: `nil body` for an empty one, the text otherwise."""
    if not data:
        return "nil body"
    return data.decode("utf-8", "replace").rstrip("\n")


async def view_stream(s: Session, info: JsonDict, size: int, start_id: int, since: int | None,
                      raw: bool, subject: str | None) -> None:
    """natscli's pager: `size` messages a page, "Next Page?" asked between pages (stdin);
    ends at the end of the stream."""
    name = info["config"]["name"]
    state = info.get("state") or {}
    seq = max(int(state.get("first_seq") or 1), 1)
    if start_id > 0:
        seq = start_id
    if since:
        cutoff = time.time_ns() - since
        seq = await _first_seq_after(s, name, seq, cutoff, subject)
    shown = 0
    while True:
        try:
            message = await s.js.msg_get(name, {"seq": seq, "next_by_subj": subject or ">"})
        except ApiError as exc:
            if exc.err_code in (10037, 10012):  # no message found / bad sequence
                log("Reached apparent end of data")
                return
            raise
        seq = int(message["seq"]) + 1
        data = base64.b64decode(message.get("data") or "")
        if raw:
            out(data.decode("utf-8", "replace"))
        else:
            moment = parse_time(message.get("time"))
            out(f"[{message['seq']}] Subject: {message.get('subject')} Received: "
                f"{moment.local() if moment else ''}")
            if message.get("hdrs"):
                out()
                for key, value in decode_headers(base64.b64decode(message["hdrs"])):
                    out(f"  {key}: {value}")
            out()
            out(body_text(data))
            out()
        shown += 1
        if shown % size == 0:
            try:
                more = confirm("Next Page?", True)
            except CliError:
                return
            if not more:
                return


async def _first_seq_after(s: Session, name: str, seq: int, cutoff_ns: int,
                           subject: str | None) -> int:
    while True:
        try:
            message = await s.js.msg_get(name, {"seq": seq, "next_by_subj": subject or ">"})
        except ApiError:
            return seq
        moment = parse_time(message.get("time"))
        if moment is None or moment.unix_nanos() >= cutoff_ns:
            return int(message["seq"])
        seq = int(message["seq"]) + 1

