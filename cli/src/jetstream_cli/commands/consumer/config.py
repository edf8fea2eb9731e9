"""The consumer configuration of `consumer add` (natscli's prepareConfig: flags, then its
questions for what is left: delivery target, start policy, ack policy, replay, filter, max
deliveries, max ack pending, heartbeat and flow control for push, headers only, backoff; then
`--defaults`) and of `consumer edit` (natscli's copyAndEditConsumer). `p` is the commands'
flags by name."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from typing import Any

from ...errors import CliError
from ...jsapi import JsonDict
from ...prompts import ask_input, ask_int, ask_select, confirm
from ...units import go_duration, parse_duration, rfc3339_ns
from .._shared import load_json_file, parse_metadata
from .show import ACK_NAMES

UNSET = "_unset_"


def linear_backoff(steps: int, low: int, high: int) -> list[int]:
    """jsm.go's LinearBackoffPeriods, in nanoseconds (rounded to milliseconds)."""
    if steps <= 0:
        raise CliError("could not determine backoff policy: steps must be more than 0")
    if low == 0 or high == 0:
        raise CliError("could not determine backoff policy: minimum and maximum retry can not be 0")
    low, high = min(low, high), max(low, high)
    step = (high - low) // steps
    if high != low and step == 0:
        raise CliError(f"step range between {go_duration(low)} and {go_duration(high)} is too "
                       f"small for {steps} steps")
    return [low + round(i * step / 1_000_000) * 1_000_000 for i in range(steps)]


def start_policy(cfg: JsonDict, policy: str) -> None:
    """natscli's setStartPolicy: all, last, new/next, subject, a sequence or a duration."""
    if not policy:
        return
    if policy == "all":
        cfg["deliver_policy"] = "all"
    elif policy == "last":
        cfg["deliver_policy"] = "last"
    elif policy in ("new", "next"):
        cfg["deliver_policy"] = "new"
    elif policy in ("subject", "last_per_subject"):
        cfg["deliver_policy"] = "last_per_subject"
    elif policy.isdigit():
        cfg["deliver_policy"] = "by_start_sequence"
        cfg["opt_start_seq"] = int(policy)
    else:
        try:
            delta = parse_duration(policy)
        except ValueError as exc:
            raise CliError(f"could not parse starting delta: {exc}") from exc
        cfg["deliver_policy"] = "by_start_time"
        cfg["opt_start_time"] = rfc3339_ns(time.time_ns() - delta)


def prepare_config(p: dict[str, Any]) -> JsonDict:
    """The consumer configuration for `consumer add` (natscli's prepareConfig)."""
    if p["config"]:
        loaded = load_json_file(p["config"], "configuration")
        if loaded.get("durable_name") and p["consumer"] and loaded["durable_name"] != p["consumer"]:
            loaded["durable_name"] = p["consumer"]
        if loaded.get("deliver_subject") and p["target"]:
            loaded["deliver_subject"] = p["target"]
        return loaded

    defaults = p["defaults"]
    cfg: JsonDict = {"ack_policy": "explicit", "replay_policy": "instant",
                     "deliver_policy": "all"}
    if p["description"]:
        cfg["description"] = p["description"]
    name = p["consumer"]
    if not name and not p["ephemeral"]:
        name = ask_input("Consumer name", required=True)
    if name:
        cfg["name" if p["ephemeral"] else "durable_name"] = name
        if not p["ephemeral"] and re.search(r"[.*>]", name):
            raise CliError("durable name can not contain '.', '*', '>'")

    target = p["target"]
    if not p["pull"] and not target:
        target = ask_input("Delivery target (empty for Pull Consumers)")
    if target:
        cfg["deliver_subject"] = target

    group, policy, ack = p["deliver_group"], p["deliver"], p["ack"]
    max_deliver, max_pending = p["max_deliver"], p["max_pending"]
    replay, heartbeat = p["replay"], p["heartbeat"]
    headers_only, flow_control = p["headers_only"], p["flow_control"]
    if defaults:
        group = "" if group == UNSET else group
        policy = policy or "all"
        ack = ack or ("explicit" if p["pull"] or not target else "none")
        max_deliver = max_deliver or -1
        max_pending = 0 if max_pending == -1 else max_pending
        replay = replay or "instant"
        heartbeat = heartbeat or "-1"
        headers_only = bool(headers_only)
        if target:
            replay = "instant"
            flow_control = bool(flow_control)

    if target and group == UNSET:
        group = ask_input("Delivery Queue Group")
    if group and group != UNSET and target:
        cfg["deliver_group"] = group

    if not policy:
        policy = ask_input("Start policy (all, new, last, subject, 1h, msg sequence)", "all",
                           required=True)
    start_policy(cfg, policy)

    if not ack:
        ack = ask_select("Acknowledgment policy", ["explicit", "all", "none"],
                         "explicit" if not target else "none")
    if not replay:
        replay = ask_select("Replay policy", ["instant", "original"], "instant")
    ack = {"flowcontrol": "flow_control", "fc": "flow_control"}.get(ack.lower(), ack.lower())
    if ack not in ACK_NAMES:
        raise CliError(f"invalid ack policy '{ack}'")
    cfg["ack_policy"] = ack
    if ack == "none":
        cfg["max_deliver"] = -1
    if p["wait"] > 0:
        cfg["ack_wait"] = p["wait"]
    if p["sample"] > 0:
        if p["sample"] > 100:
            raise CliError("sample percent is not between 0 and 100")
        cfg["sample_freq"] = str(p["sample"])
    cfg["replay_policy"] = replay.lower()

    filters = list(p["filter"])
    if not filters and not defaults:
        filters = ask_input("Filter Stream by subjects (blank for all)").replace(",", " ").split()
    if len(filters) == 1:
        cfg["filter_subject"] = filters[0]
    elif len(filters) > 1:
        cfg["filter_subjects"] = filters
    if not filters and cfg["deliver_policy"] == "last_per_subject":
        cfg["filter_subject"] = ">"

    if not max_deliver and ack != "none":
        max_deliver = ask_int("Maximum Allowed Deliveries", "-1")
    if max_pending == -1 and ack != "none":
        max_pending = ask_int("Maximum Acknowledgments Pending", "0")

    if target:
        if heartbeat == "-1":
            pass
        elif heartbeat:
            cfg["idle_heartbeat"] = _duration(heartbeat, "invalid heartbeat duration")
        else:
            cfg["idle_heartbeat"] = _duration(ask_input("Idle Heartbeat", "0s"),
                                              "invalid heartbeat duration")
        if cfg.get("idle_heartbeat") == 0:
            del cfg["idle_heartbeat"]
        if flow_control is None:
            flow_control = confirm("Enable Flow Control, ie --flow-control", False)
        if flow_control:
            cfg["flow_control"] = True
    if headers_only is None:
        headers_only = confirm("Deliver headers only without bodies", False)
    if headers_only:
        cfg["headers_only"] = True

    backoff_mode, steps = p["backoff"], p["backoff_steps"]
    low, high = p["backoff_min"], p["backoff_max"]
    if ack != "none" and not defaults and not backoff_mode:
        if confirm("Add a Retry Backoff Policy", False):
            backoff_mode = ask_select("Backoff policy", ["linear", "none"], "none")
            if backoff_mode == "linear":
                low = _duration(ask_input("Minimum retry time", "1m"), "invalid minimum")
                high = _duration(ask_input("Maximum retry time", "10m"), "invalid maximum")
                steps = ask_int("Number of steps to generate in the policy", "20")
                if steps < 1:
                    raise CliError("backoff steps must be > 0")
    if backoff_mode == "linear":
        cfg["backoff"] = linear_backoff(steps, low, high)
        if max_deliver == -1:
            max_deliver = len(cfg["backoff"]) + 1

    max_pending = 0 if max_pending == -1 else max_pending
    if max_pending:
        cfg["max_ack_pending"] = max_pending
    if p["inactive_threshold"]:
        cfg["inactive_threshold"] = p["inactive_threshold"]
    for flag, key in (("max_pull_batch", "max_batch"), ("max_pull_expire", "max_expires"),
                      ("max_pull_bytes", "max_bytes")):
        if p[flag]:
            cfg[key] = p[flag]
    if not target and p["max_waiting"]:
        cfg["max_waiting"] = p["max_waiting"]
    if max_deliver and ack != "none":
        cfg["max_deliver"] = max_deliver
    if p["bps"] and not target:
        raise CliError("rate limits are only possible on Push consumers")
    if not target and heartbeat not in (None, "", "-1"):
        raise CliError("pull subscribers does not support idle heartbeats")
    if p["bps"]:
        cfg["rate_limit_bps"] = p["bps"]
    cfg["num_replicas"] = p["replicas"]
    if p["memory"]:
        cfg["mem_storage"] = True
    if p["metadata"]:
        cfg["metadata"] = parse_metadata(p["metadata"])
    if p["pause"]:
        cfg["pause_until"] = _pause_until(p["pause"])
    if p["pinned_groups"] and p["overflow_groups"]:
        raise CliError("setting both overflow and pinned groups are not supported")
    if p["pinned_groups"]:
        cfg.update(priority_policy="pinned_client", priority_groups=list(p["pinned_groups"]))
        if p["pinned_ttl"]:
            cfg["priority_timeout"] = p["pinned_ttl"]
    elif p["overflow_groups"]:
        cfg.update(priority_policy="overflow", priority_groups=list(p["overflow_groups"]))
    elif p["prioritized_groups"]:
        cfg.update(priority_policy="prioritized", priority_groups=list(p["prioritized_groups"]))
    return cfg


def _duration(text: str, what: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise CliError(f"{what}: {exc}") from exc


def _pause_until(text: str) -> str:
    try:
        return rfc3339_ns(time.time_ns() + parse_duration(text))
    except ValueError:
        pass
    try:
        moment = datetime.strptime(text, "%Y-%m-%d %H:%M:%S").astimezone()
    except ValueError as exc:
        raise CliError(f"could not parse pause time {text!r}: use a duration or "
                       "'2006-01-02 15:04:05'") from exc
    return rfc3339_ns(int(moment.timestamp()) * 1_000_000_000)


def edit_config(cfg: JsonDict, p: dict[str, Any]) -> JsonDict:
    """natscli's copyAndEditConsumer."""
    if p["config"]:
        return load_json_file(p["config"], "configuration")
    new = json.loads(json.dumps(cfg))
    if p["description"]:
        new["description"] = p["description"]
    if p["inactive_threshold"]:
        new["inactive_threshold"] = p["inactive_threshold"]
    if p["max_deliver"]:
        new["max_deliver"] = p["max_deliver"]
    if p["max_pending"] != -1:
        new["max_ack_pending"] = p["max_pending"]
    if p["wait"] != -1_000_000_000:
        new["ack_wait"] = p["wait"]
    if p["sample"] != -1:
        if not 0 <= p["sample"] <= 100:
            raise CliError("sample percent is not between 0 and 100")
        new["sample_freq"] = str(p["sample"]) if p["sample"] > 0 else ""
    for flag, key in (("max_pull_batch", "max_batch"), ("max_pull_expire", "max_expires"),
                      ("max_pull_bytes", "max_bytes")):
        if p[flag]:
            new[key] = p[flag]
    if p["backoff"]:
        new["backoff"] = (linear_backoff(p["backoff_steps"], p["backoff_min"], p["backoff_max"])
                          if p["backoff"] == "linear" else [])
    if p["target"]:
        new["deliver_subject"] = p["target"]
    if p["headers_only"] is not None:
        new["headers_only"] = p["headers_only"]
    if len(p["filter"]) == 1:
        new["filter_subject"] = p["filter"][0]
        new.pop("filter_subjects", None)
    elif len(p["filter"]) > 1:
        new["filter_subjects"] = list(p["filter"])
        new.pop("filter_subject", None)
    if p["replicas"]:
        new["num_replicas"] = p["replicas"]
    if p["metadata"]:
        new["metadata"] = parse_metadata(p["metadata"])
    return new
