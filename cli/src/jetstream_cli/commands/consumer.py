"""`jetstream consumer ...`: natscli's consumer verbs (add, ls, info, state, edit, rm, next,
report) with its flags, questions and output.

`consumer add` follows natscli's prepareConfig: flags, then its questions for what is left
(delivery target, start policy, ack policy, replay, filter, max deliveries, max ack
pending, heartbeat and flow control for push, headers only, backoff), then `--defaults`.
`consumer next` pulls one message a request (`--count` requests, natscli's output line
`[15:04:05] subj: ... / tries: ... / cons seq: ... / str seq: ... / pending: ...`) and
acknowledges it unless `--no-ack`; the first request waits up to `--timeout` for a message,
the following ones take only what is already pending, so `--count 3` on a stream with one
message prints it and stops.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from datetime import datetime
from typing import Any

import click
from nats.aio.msg import Msg

from ..errors import CONSUMER_NOT_FOUND, STREAM_NOT_FOUND, ApiError, CliError
from ..jsapi import JsonDict
from ..prompts import ask_input, ask_int, ask_select, confirm
from ..render import Columns, Nanos, Table, cell, to_json
from ..session import Session, connection_options, group_with_aliases, log, out, run
from ..units import go_duration, parse_duration, parse_time, rfc3339_ns
from ._shared import (
    BYTES,
    DURATION,
    ack_metadata,
    api_level,
    choose,
    is_internal_stream,
    load_json_file,
    parse_metadata,
    render_cluster,
    render_meta_api,
    since_ns,
)
from .stream import config_diff

ACK_NAMES = {"none": "None", "all": "All", "explicit": "Explicit", "flow_control": "Flow Control"}
REPLAY_NAMES = {"instant": "Instant", "original": "Original"}
PRIORITY_NAMES = {"overflow": "Overflow", "pinned_client": "Pinned Client",
                  "prioritized": "Prioritized"}
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


# -- showing a consumer ------------------------------------------------------

def _deliver_policy(cfg: JsonDict) -> str:
    policy = cfg.get("deliver_policy")
    return {
        "all": "All", "last": "Last", "new": "New", "last_per_subject": "Last Per Subject",
        "by_start_time": f"Since {cfg.get('opt_start_time')}",
        "by_start_sequence": f"From Sequence {cfg.get('opt_start_seq')}",
    }.get(str(policy), str(policy))


def format_consumer_info(info: JsonDict, state_only: bool = False) -> str:
    """natscli's `consumer info` text for a consumer info answer."""
    cfg = info.get("config") or {}
    created = parse_time(info.get("created"))
    when = created.local() if created else ""
    kind = "State" if state_only else "Information"
    cols = Columns(f"{kind} for Consumer {info.get('stream_name')} > {info.get('name')} "
                   f"created {when}")
    if not state_only:
        cols.title("Configuration")
        cols.row_if_not_empty("Name", cfg.get("name"))
        durable = cfg.get("durable_name")
        cols.row_if("Durable Name", durable, bool(durable) and durable != cfg.get("name"))
        cols.row_if_not_empty("Description", cfg.get("description"))
        if cfg.get("deliver_subject"):
            cols.row("Delivery Subject", cfg["deliver_subject"])
        else:
            cols.row("Pull Mode", True)
        if cfg.get("filter_subject"):
            cols.row("Filter Subject", cfg["filter_subject"])
        elif cfg.get("filter_subjects"):
            cols.row("Filter Subjects", cfg["filter_subjects"])
        cols.row("Deliver Policy", _deliver_policy(cfg))
        cols.row_if("Deliver Queue Group", cfg.get("deliver_group"),
                    bool(cfg.get("deliver_group")) and bool(cfg.get("deliver_subject")))
        ack = str(cfg.get("ack_policy", "none"))
        cols.row("Ack Policy", ACK_NAMES.get(ack, ack))
        cols.row_if("Ack Wait", Nanos(int(cfg.get("ack_wait") or 0)), ack != "none")
        replay = str(cfg.get("replay_policy", "instant"))
        cols.row("Replay Policy", REPLAY_NAMES.get(replay, replay))
        max_deliver = int(cfg.get("max_deliver") or -1)
        cols.row_if("Maximum Deliveries", max_deliver, max_deliver != -1)
        cols.row_if_not_empty("Sampling Rate", cfg.get("sample_freq"))
        max_ack = int(cfg.get("max_ack_pending") or 0)
        cols.row_if("Max Ack Pending", max_ack, max_ack > 0)
        waiting = int(cfg.get("max_waiting") or 0)
        cols.row_if("Max Waiting Pulls", waiting, waiting > 0)
        heartbeat = int(cfg.get("idle_heartbeat") or 0)
        cols.row_if("Idle Heartbeat", Nanos(heartbeat), heartbeat > 0)
        cols.row_if("Flow Control", bool(cfg.get("flow_control")), bool(cfg.get("deliver_subject")))
        cols.row_if("Headers Only", True, bool(cfg.get("headers_only")))
        inactive = int(cfg.get("inactive_threshold") or 0)
        cols.row_if("Inactive Threshold", Nanos(inactive),
                    inactive > 0 and not cfg.get("deliver_subject"))
        for label, key in (("Max Pull Expire", "max_expires"), ("Max Pull Batch", "max_batch"),
                           ("Max Pull MaxBytes", "max_bytes")):
            value = int(cfg.get(key) or 0)
            cols.row_if(label, Nanos(value) if key == "max_expires" else value, value > 0)
        backoff = cfg.get("backoff") or []
        cols.row_if("Backoff", ", ".join(go_duration(int(b)) for b in backoff), bool(backoff))
        replicas = int(cfg.get("num_replicas") or 0)
        cols.row_if("Replicas", replicas, replicas > 0)
        cols.row_if("Memory Storage", True, bool(cfg.get("mem_storage")))
        if cfg.get("priority_policy") and cfg["priority_policy"] != "none":
            cols.row("Priority Policy", PRIORITY_NAMES.get(cfg["priority_policy"],
                                                           cfg["priority_policy"]))
            cols.row("Priority Groups", cfg.get("priority_groups") or [])
        metadata = {k: v for k, v in (cfg.get("metadata") or {}).items()
                    if not k.startswith("_nats")}
        if metadata:
            cols.title("Metadata")
            cols.map_strings(metadata)
    cluster = info.get("cluster") or {}
    if cluster.get("name"):
        cols.title("Cluster Information")
        cols.row("Name", cluster["name"])
        cols.row("Leader", cluster.get("leader", ""))
    cols.title("State")
    render_meta_api(cols, cfg.get("metadata"))
    delivered = info.get("delivered") or {}
    line = (f"Consumer sequence: {int(delivered.get('consumer_seq') or 0):,} "
            f"Stream sequence: {int(delivered.get('stream_seq') or 0):,}")
    if delivered.get("last_active"):
        line += f" Last delivery: {cell(Nanos(since_ns(info, delivered['last_active'])))} ago"
    cols.row("Last Delivered Message", line)
    if cfg.get("ack_policy") != "none":
        floor = info.get("ack_floor") or {}
        line = (f"Consumer sequence: {int(floor.get('consumer_seq') or 0):,} "
                f"Stream sequence: {int(floor.get('stream_seq') or 0):,}")
        if floor.get("last_active"):
            line += f" Last Ack: {cell(Nanos(since_ns(info, floor['last_active'])))} ago"
        cols.row("Acknowledgment Floor", line)
        pending = int(info.get("num_ack_pending") or 0)
        if int(cfg.get("max_ack_pending") or 0) > 0:
            cols.row("Outstanding Acks",
                     f"{pending:,} out of maximum {int(cfg['max_ack_pending']):,}")
        else:
            cols.row("Outstanding Acks", pending)
        cols.row("Redelivered Messages", int(info.get("num_redelivered") or 0))
    cols.row("Unprocessed Messages", int(info.get("num_pending") or 0))
    if not cfg.get("deliver_subject"):
        waiting = int(info.get("num_waiting") or 0)
        if int(cfg.get("max_waiting") or 0) > 0:
            cols.row("Waiting Pulls", f"{waiting:,} of maximum {int(cfg['max_waiting']):,}")
        else:
            cols.row("Waiting Pulls", f"{waiting:,} of unlimited")
    elif info.get("push_bound"):
        group = cfg.get("deliver_group")
        cols.row("Active Interest", f"Active using Queue Group {group}" if group else "Active")
    else:
        cols.row("Active Interest", "No interest")
    return cols.render()


def show_consumer_info(info: JsonDict, as_json: bool, state_only: bool = False) -> None:
    if as_json:
        out(to_json(info))
    else:
        click.echo(format_consumer_info(info, state_only), nl=False)


# -- pulling -------------------------------------------------------------------

async def next_messages(s: Session, stream: str, consumer: str, count: int, ack: bool,
                        nak: bool, term: bool, raw: bool) -> None:
    inbox = s.nc.new_inbox()
    sub = await s.nc.subscribe(inbox)
    subject = f"{s.js.prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"
    try:
        for index in range(count):
            wait = index == 0
            request: JsonDict = {"batch": 1}
            if wait:
                request["expires"] = s.opts.timeout_ns
            else:
                request["no_wait"] = True
            await s.nc.publish(subject, json.dumps(request).encode(), reply=inbox)
            try:
                msg = await sub.next_msg(timeout=s.opts.timeout + 1.0)
            except asyncio.TimeoutError as exc:
                raise CliError("no message received: timeout") from exc
            status = (msg.headers or {}).get("Status")
            if status and not msg.data:
                description = (msg.headers or {}).get("Description", "")
                if status in ("404", "408") and not wait:
                    log("No more messages available")
                    return
                if status in ("404", "408"):
                    raise CliError(f"no message received: {description or 'timeout'}")
                raise CliError(f"could not fetch the next message: {status} {description}".strip())
            _print_next(msg, raw)
            await _respond(s, msg, ack, nak, term, raw)
    finally:
        await sub.unsubscribe()


def _print_next(msg: Msg, raw: bool) -> None:
    data = msg.data.decode("utf-8", "replace")
    if raw:
        out(data)
        return
    meta = ack_metadata(msg)
    if meta is None:
        out(f"--- subject: {msg.subject} reply: {msg.reply}" if msg.reply
            else f"--- subject: {msg.subject}")
    else:
        delivered, cseq, sseq, pending = meta
        out(f"[{time.strftime('%H:%M:%S')}] subj: {msg.subject} / tries: {delivered} / "
            f"cons seq: {cseq} / str seq: {sseq} / pending: {pending:,}")
    if msg.headers:
        out()
        out("Headers:")
        out()
        for key, value in msg.headers.items():
            out(f"  {key}: {value}")
        out()
        out("Data:")
        out()
    out()
    out(data)


async def _respond(s: Session, msg: Msg, ack: bool, nak: bool, term: bool, raw: bool) -> None:
    if term:
        await s.nc.publish(msg.reply, b"+TERM")
        await s.nc.flush()
        out("\nTerminated message")
        return
    if ack or nak:
        if not msg.reply:
            raise CliError("could not Acknowledge message: the message has no reply subject")
        await s.nc.publish(msg.reply, b"-NAK" if nak else b"+ACK")
        await s.nc.flush()
        if not raw:
            out(f"\n{'Negative ' if nak else ''}Acknowledged message")
            out()


# -- the click commands --------------------------------------------------------

def _create_flags(edit: bool):  # type: ignore[no-untyped-def]
    decorators = [
        click.option("--backoff", type=click.Choice(["linear", "none"]),
                     help="Creates a consumer backoff policy using a specific pre-written "
                          "algorithm (none, linear)"),
        click.option("--backoff-steps", type=int, default=10,
                     help="Number of steps to use when creating the backoff policy"),
        click.option("--backoff-min", type=DURATION, default="1m",
                     help="The shortest backoff period that will be generated"),
        click.option("--backoff-max", type=DURATION, default="20m",
                     help="The longest backoff period that will be generated"),
        click.option("--description", help="Sets a contextual description for the consumer"),
        click.option("--filter", multiple=True, metavar="SUBJECTS",
                     help="Filter Stream by subjects"),
        click.option("--headers-only/--no-headers-only", default=None,
                     help="Deliver only headers and no bodies"),
        click.option("--max-deliver", type=int, default=0,
                     help="Maximum amount of times a message will be delivered"),
        click.option("--max-pending", "--max-outstanding", "max_pending", type=int, default=-1,
                     help="Maximum pending Acks before consumers are paused"),
        click.option("--max-pull-batch", type=int, default=0,
                     help="Maximum size batch size for a pull request to accept"),
        click.option("--max-pull-expire", type=DURATION, default=None,
                     help="Maximum expire duration for a pull request to accept"),
        click.option("--max-pull-bytes", type=BYTES, default=None,
                     help="Maximum max bytes for a pull request to accept"),
        click.option("--sample", type=int, default=-1,
                     help="Percentage of requests to sample for monitoring purposes"),
        click.option("--target", metavar="SUBJECT", help="Push based delivery target subject"),
        click.option("--wait", type=DURATION, default="-1s", help="Acknowledgment waiting time"),
        click.option("--inactive-threshold", type=DURATION, default=None,
                     help="How long to allow an ephemeral consumer to be idle before removing it"),
        click.option("--replicas", type=int, default=0,
                     help="Sets a custom replica count rather than inherit from the stream"),
        click.option("--metadata", multiple=True, metavar="META",
                     help="Adds metadata to the consumer"),
        click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output"),
        click.option("--config", type=click.Path(exists=True, dir_okay=False),
                     help="JSON file to read configuration from"),
    ]
    if not edit:
        decorators += [
            click.option("--ack", type=click.Choice(["none", "all", "explicit", "flow_control"]),
                         help="Acknowledgment policy (none, all, explicit, flow_control)"),
            click.option("--bps", type=int, default=0,
                         help="Restrict message delivery to a certain bit per second"),
            click.option("--deliver", metavar="POLICY",
                         help="Start policy (all, new, last, subject, 1h, msg sequence)"),
            click.option("--deliver-group", default=UNSET, metavar="GROUP",
                         help="Delivers push messages only to subscriptions matching this group"),
            click.option("--ephemeral", is_flag=True, help="Create an ephemeral consumer"),
            click.option("--flow-control", is_flag=True, default=None,
                         help="Enable Push consumer flow control"),
            click.option("--heartbeat", help="Enable idle Push consumer heartbeats (-1 disable)"),
            click.option("--max-waiting", type=int, default=0,
                         help="Maximum number of outstanding pulls allowed"),
            click.option("--pull", is_flag=True, help="Deliver messages in 'pull' mode"),
            click.option("--replay", type=click.Choice(["instant", "original"]),
                         help="Replay Policy (instant, original)"),
            click.option("--memory", is_flag=True,
                         help="Force the consumer state to be stored in memory rather than "
                              "inherit from the stream"),
            click.option("--pause", help="Pause the consumer for a duration after start or "
                                         "until a specific timestamp"),
            click.option("--pinned-groups", multiple=True,
                         help="Create a Pinned Client consumer based on these groups"),
            click.option("--pinned-ttl", type=DURATION, default=None,
                         help="The time to allow for a client to pull before losing the "
                              "pinned status"),
            click.option("--overflow-groups", multiple=True,
                         help="Create a Overflow consumer based on these groups"),
            click.option("--prioritized-groups", multiple=True,
                         help="Create a Prioritized consumer based on these groups"),
            click.option("--output", type=click.Path(dir_okay=False),
                         help="Save configuration instead of creating"),
            click.option("--defaults", is_flag=True, help="Accept default values for all prompts"),
        ]
    else:
        decorators += [
            click.option("-f", "--force", is_flag=True, help="Force edit without prompting"),
            click.option("--dry-run", is_flag=True,
                         help="Only shows differences, do not edit the stream"),
        ]

    def apply(func):  # type: ignore[no-untyped-def]
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


async def _consumer_info(s: Session, stream: str, name: str) -> JsonDict:
    try:
        return await s.js.consumer_info(stream, name)
    except ApiError as exc:
        if exc.err_code == STREAM_NOT_FOUND:
            raise CliError(f"stream {stream!r} not found") from exc
        if exc.err_code == CONSUMER_NOT_FOUND:
            raise CliError(f"consumer {name!r} not found on stream {stream!r}") from exc
        raise


async def _check_stream(s: Session, stream: str) -> JsonDict:
    try:
        return await s.js.stream_info(stream)
    except ApiError as exc:
        if exc.err_code == STREAM_NOT_FOUND:
            raise CliError(f"stream {stream!r} not found") from exc
        raise


async def _pick(s: Session, stream: str | None, consumer: str | None, show_all: bool,
                want_consumer: bool = True) -> tuple[str, str]:
    if not stream:
        names = [n for n in await s.js.stream_names() if show_all or not is_internal_stream(n)]
        stream = choose("stream", None, names)
    await _check_stream(s, stream)
    if want_consumer and not consumer:
        consumer = choose("consumer", None, await s.js.consumer_names(stream))
    return stream, consumer or ""


def register(cli: click.Group) -> None:
    @group_with_aliases(cli, "consumer", {"create": "add", "new": "add", "list": "ls",
                                           "nfo": "info", "update": "edit", "delete": "rm",
                                           "del": "rm"})
    @click.option("-a", "--all", "show_all", is_flag=True,
                  help="Operate on all streams including system ones")
    @click.pass_context
    def consumer(ctx: click.Context, show_all: bool) -> None:
        """JetStream consumer management"""
        ctx.meta["consumer.all"] = show_all

    @consumer.command("add")
    @click.argument("stream", required=False)
    @click.argument("consumer_name", metavar="CONSUMER", required=False)
    @_create_flags(edit=False)
    @connection_options()
    @click.pass_context
    def add(ctx: click.Context, stream: str | None, consumer_name: str | None, **p: Any) -> None:
        """Creates a new consumer"""
        p["consumer"] = consumer_name
        show_all = bool(ctx.meta.get("consumer.all"))

        async def work(s: Session) -> None:
            name, _ = await _pick(s, stream, None, show_all, want_consumer=False)
            cfg = prepare_config(p)
            if p["output"]:
                with open(p["output"], "w") as handle:
                    handle.write(to_json(cfg))
                return
            info = await s.js.consumer_create(name, cfg)
            show_consumer_info(info, p["as_json"])

        run(ctx, work)

    @consumer.command("edit")
    @click.argument("stream", required=False)
    @click.argument("consumer_name", metavar="CONSUMER", required=False)
    @_create_flags(edit=True)
    @connection_options()
    @click.pass_context
    def edit(ctx: click.Context, stream: str | None, consumer_name: str | None, **p: Any) -> None:
        """Edits the configuration of a consumer"""
        show_all = bool(ctx.meta.get("consumer.all"))

        async def work(s: Session) -> int:
            sname, cname = await _pick(s, stream, consumer_name, show_all)
            current = (await _consumer_info(s, sname, cname))["config"]
            if not current.get("durable_name"):
                raise CliError("only durable consumers can be edited")
            new = edit_config(current, p)
            if new.get("backoff") and new.get("ack_wait") != current.get("ack_wait"):
                raise CliError("consumers with backoff policies do not support editing Ack Wait")
            diff = config_diff(current, new)
            if not diff:
                if not p["dry_run"]:
                    out("No difference in configuration")
                return 0
            out(f"Differences (-old +new):\n{diff}")
            if p["dry_run"]:
                return 1
            if not p["force"] and not confirm(f"Really edit Consumer {sname} > {cname}", False):
                return 0
            info = await s.js.consumer_create(sname, new, action="update")
            show_consumer_info(info, p["as_json"])
            return 0

        run(ctx, work)

    @consumer.command("ls")
    @click.argument("stream", required=False)
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @click.option("-n", "--names", is_flag=True, help="Show just the consumer names")
    @connection_options()
    @click.pass_context
    def ls(ctx: click.Context, stream: str | None, as_json: bool, names: bool) -> None:
        """List known consumers"""
        show_all = bool(ctx.meta.get("consumer.all"))

        async def work(s: Session) -> None:
            sname, _ = await _pick(s, stream, None, show_all, want_consumer=False)
            listed = await s.js.consumer_names(sname)
            if as_json:
                out(to_json(listed))
                return
            if names:
                for name in listed:
                    out(name)
                return
            if not listed:
                out("No Consumers defined")
                return
            table = Table("Consumers", ["Name", "Description", "Created", "Ack Pending",
                                        "Unprocessed", "Last Delivery"])
            for info in await s.js.consumer_list(sname):
                created = parse_time(info.get("created"))
                delivered = (info.get("delivered") or {}).get("last_active")
                table.add_row(info.get("name", ""), (info.get("config") or {}).get(
                    "description", ""), created.local() if created else "",
                    int(info.get("num_ack_pending") or 0), int(info.get("num_pending") or 0),
                    Nanos(since_ns(info, delivered)))
            out(table.render())
            out()

        run(ctx, work)

    @consumer.command("info")
    @click.argument("stream", required=False)
    @click.argument("consumer_name", metavar="CONSUMER", required=False)
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @click.option("--state", "state_only", is_flag=True, hidden=True)
    @connection_options()
    @click.pass_context
    def info(ctx: click.Context, stream: str | None, consumer_name: str | None, as_json: bool,
             state_only: bool) -> None:
        """Consumer information"""
        show_all = bool(ctx.meta.get("consumer.all"))

        async def work(s: Session) -> None:
            sname, cname = await _pick(s, stream, consumer_name, show_all)
            show_consumer_info(await _consumer_info(s, sname, cname), as_json, state_only)

        run(ctx, work)

    @consumer.command("state")
    @click.argument("stream", required=False)
    @click.argument("consumer_name", metavar="CONSUMER", required=False)
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @connection_options()
    @click.pass_context
    def state(ctx: click.Context, stream: str | None, consumer_name: str | None,
              as_json: bool) -> None:
        """Consumer state"""
        ctx.invoke(info, stream=stream, consumer_name=consumer_name, as_json=as_json,
                   state_only=True)

    @consumer.command("rm")
    @click.argument("stream", required=False)
    @click.argument("consumer_name", metavar="CONSUMER", required=False)
    @click.option("-f", "--force", is_flag=True, help="Force removal without prompting")
    @connection_options()
    @click.pass_context
    def rm(ctx: click.Context, stream: str | None, consumer_name: str | None,
           force: bool) -> None:
        """Removes a consumer"""
        if force and not (stream and consumer_name):
            raise CliError("--force requires a stream and consumer name")
        show_all = bool(ctx.meta.get("consumer.all"))

        async def work(s: Session) -> None:
            sname, cname = await _pick(s, stream, consumer_name, show_all)
            await _consumer_info(s, sname, cname)
            if not force and not confirm(f"Really delete Consumer {sname} > {cname}", False):
                return
            await s.js.consumer_delete(sname, cname)

        run(ctx, work)

    @consumer.command("next")
    @click.argument("stream")
    @click.argument("consumer_name", metavar="CONSUMER")
    @click.option("--ack/--no-ack", default=None, help="Acknowledge received message")
    @click.option("--nak", is_flag=True, help="Perform a Negative Acknowledgement on the message")
    @click.option("--term", is_flag=True, help="Terms the message")
    @click.option("-r", "--raw", is_flag=True, help="Show only the message")
    @click.option("--count", type=int, default=1,
                  help="Number of messages to try to fetch from the pull consumer")
    @connection_options()
    @click.pass_context
    def next_(ctx: click.Context, stream: str, consumer_name: str, ack: bool | None, nak: bool,
              term: bool, raw: bool, count: int) -> None:
        """Retrieves messages from Pull consumers without interactive prompts"""
        do_ack = True if ack is None else ack
        if term:
            if ack is None:
                do_ack = False
            if do_ack or nak:
                raise CliError("can not both Acknowledge and Terminate message")
        if nak:
            do_ack = False

        async def work(s: Session) -> None:
            info = await _consumer_info(s, stream, consumer_name)
            if (info.get("config") or {}).get("deliver_subject"):
                raise CliError(f"consumer {consumer_name!r} is not a Pull consumer")
            await next_messages(s, stream, consumer_name, max(count, 1), do_ack, nak, term, raw)

        run(ctx, work)

    @consumer.command("report")
    @click.argument("stream", required=False)
    @click.option("-r", "--raw", is_flag=True, help="Show un-formatted numbers")
    @click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
    @connection_options()
    @click.pass_context
    def report(ctx: click.Context, stream: str | None, raw: bool, as_json: bool) -> None:
        """Reports on consumer statistics"""
        show_all = bool(ctx.meta.get("consumer.all"))

        async def work(s: Session) -> None:
            sname, _ = await _pick(s, stream, None, show_all, want_consumer=False)
            stream_info = await s.js.stream_info(sname)
            infos = await s.js.consumer_list(sname)
            rows = [consumer_row(c) for c in infos]
            if as_json:
                out(to_json(rows))
                return
            messages = int((stream_info.get("state") or {}).get("messages") or 0)
            count = int((stream_info.get("state") or {}).get("consumer_count") or 0)
            out(render_consumer_report(sname, count, messages, rows, raw))
            out()

        run(ctx, work)


def consumer_row(info: JsonDict) -> JsonDict:
    cfg = info.get("config") or {}
    return {
        "consumer": info.get("name", ""),
        "mode": "Push" if cfg.get("deliver_subject") else "Pull",
        "ack_policy": ACK_NAMES.get(str(cfg.get("ack_policy")), str(cfg.get("ack_policy"))),
        "ack_wait": int(cfg.get("ack_wait") or 0),
        "ack_pending": int(info.get("num_ack_pending") or 0),
        "redelivered": int(info.get("num_redelivered") or 0),
        "unprocessed": int(info.get("num_pending") or 0),
        "ack_floor": int((info.get("ack_floor") or {}).get("stream_seq") or 0),
        "api_level": api_level(cfg),
        "cluster": info.get("cluster"),
    }


def render_consumer_report(stream: str, count: int, messages: int, rows: list[JsonDict],
                           raw: bool) -> str:
    table = Table(f"Consumer report for {stream} with {count:,} consumers",
                  ["Consumer", "Mode", "Ack Policy", "Ack Wait", "Ack Pending", "Redelivered",
                   "Unprocessed", "Ack Floor", "API Level", "Cluster"])
    for r in rows:
        if raw:
            table.add_row(r["consumer"], r["mode"], r["ack_policy"], str(r["ack_wait"]),
                          r["ack_pending"], r["redelivered"], r["unprocessed"], r["ack_floor"],
                          r["api_level"], render_cluster(r["cluster"]))
            continue
        unprocessed = "0"
        if r["unprocessed"] > 0:
            pct = min(100, int(r["unprocessed"] / messages * 100)) if messages else 100
            unprocessed = f"{r['unprocessed']:,} / {pct}%"
        table.add_row(r["consumer"], r["mode"], r["ack_policy"], cell(Nanos(r["ack_wait"])),
                      f"{r['ack_pending']:,}", f"{r['redelivered']:,}", unprocessed,
                      f"{r['ack_floor']:,}", r["api_level"], render_cluster(r["cluster"]))
    return table.render()
