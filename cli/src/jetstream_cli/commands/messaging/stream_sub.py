"""`sub` on a stream: natscli's JetStream subscription. An ephemeral consumer (ack policy
none, in memory, gone after a minute of inactivity) delivers from the start the flags chose,
each message printed with natscli's JetStream line; on a work-queue or interest stream, where
a consumer would take part in retention, the stream is read with direct gets instead (no
consumer), polling for new messages as natscli does. `-T` stops at the end of the stream.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

from nats.aio.msg import Msg

from ...errors import STREAM_NOT_FOUND, ApiError, CliError
from ...jsapi import JsonDict
from ...render import Nanos, cell
from ...session import Session, log, out
from ...units import NANOS_PER_SECOND, parse_time, rfc3339_ns
from .._messages import body_text, decode_headers, print_headers_and_body
from .._shared import ack_metadata


async def subscribe_to_stream(s: Session, subject: str | None, p: dict[str, Any]) -> None:
    stream = p["stream"]
    if not stream:
        names = await s.js.stream_names(subject)
        if not names:
            raise CliError(f"no stream found with subject: {subject}")
        stream = names[0]
    try:
        info = await s.js.stream_info(stream)
    except ApiError as exc:
        if exc.err_code == STREAM_NOT_FOUND:
            raise CliError(f"stream {stream!r} not found") from exc
        raise
    filter_subject = subject or ">"
    cfg: JsonDict = {"ack_policy": "none", "deliver_policy": "all", "replay_policy": "instant",
                     "filter_subject": filter_subject, "inactive_threshold": 60 * NANOS_PER_SECOND,
                     "num_replicas": 1, "mem_storage": True}
    if p["headers_only"] or p["subjects_only"]:
        cfg["headers_only"] = True
    what = f"Subscribing to subject {filter_subject}"
    if p["start_sequence"]:
        cfg.update(deliver_policy="by_start_sequence", opt_start_seq=p["start_sequence"])
        log(f"{what} starting at sequence {p['start_sequence']}")
    elif p["deliver_last"]:
        cfg["deliver_policy"] = "last"
        log(f"{what} from last received message")
    elif p["deliver_new"]:
        cfg["deliver_policy"] = "new"
        log(f"{what} for new messages")
    elif p["since"] is not None:
        cfg.update(deliver_policy="by_start_time",
                   opt_start_time=rfc3339_ns(time.time_ns() - p["since"]))
        log(f"{what} since {cell(Nanos(p['since']))}")
    elif p["last_per_subject"]:
        cfg["deliver_policy"] = "last_per_subject"
        log(f"{what} for last message per subject")
    else:
        log(f"{what} from first received message")
    if info["config"].get("retention") in ("workqueue", "interest"):
        # natscli reads these with direct gets: a consumer would take part in retention.
        await _direct_subscribe(s, info, filter_subject, cfg, p)
        return
    created = await s.js.consumer_create(stream, cfg)
    name = created["name"]
    inbox = s.nc.new_inbox()
    sub = await s.nc.subscribe(inbox)
    received = 0
    last = time.monotonic()
    next_subject = f"{s.js.prefix}.CONSUMER.MSG.NEXT.{stream}.{name}"
    try:
        while True:
            pending = int(created.get("num_pending") or 0) if received == 0 else None
            if p["terminate_at_end"] and pending == 0:
                return
            await s.nc.publish(next_subject, json.dumps(
                {"batch": 100, "expires": NANOS_PER_SECOND}).encode(), reply=inbox)
            while True:
                try:
                    msg = await sub.next_msg(timeout=2.0)
                except asyncio.TimeoutError:
                    break
                status = (msg.headers or {}).get("Status")
                if status and not msg.data:
                    if status in ("404", "408", "409"):
                        break
                    continue
                received += 1
                last = time.monotonic()
                left = _print_js(msg, received, p)
                if (p["count"] and received >= p["count"]) or (
                        p["terminate_at_end"] and left == 0):
                    return
            if p["wait"] and time.monotonic() - last > p["wait"] / NANOS_PER_SECOND:
                return
    finally:
        await sub.unsubscribe()
        try:
            await s.js.consumer_delete(stream, name)
        except CliError:
            pass  # an ephemeral consumer also goes away by its inactive threshold


async def _direct_subscribe(s: Session, info: JsonDict, subject: str, cfg: JsonDict,
                            p: dict[str, Any]) -> None:
    """Read the stream with `$JS.API.STREAM.MSG.GET` (next by subject) from the start the
    flags chose, without a consumer; at the end, wait for more unless `-T`."""
    stream = info["config"]["name"]
    state = info.get("state") or {}
    policy = cfg["deliver_policy"]
    seq = max(int(state.get("first_seq") or 1), 1)
    if policy == "by_start_sequence":
        seq = int(cfg["opt_start_seq"])
    elif policy in ("last", "last_per_subject"):
        seq = max(int(state.get("last_seq") or 1), 1)
    elif policy == "new":
        seq = int(state.get("last_seq") or 0) + 1
    cutoff = _parse_ns(cfg.get("opt_start_time"))
    received = 0
    last = time.monotonic()
    while True:
        try:
            message = await s.js.msg_get(stream, {"seq": seq, "next_by_subj": subject})
        except ApiError as exc:
            if exc.err_code not in (10037, 10012):  # no message found / bad sequence
                raise
            if p["terminate_at_end"]:
                return
            if p["wait"] and time.monotonic() - last > p["wait"] / NANOS_PER_SECOND:
                return
            await asyncio.sleep(0.25)  # natscli polls the same way for new messages
            continue
        seq = int(message["seq"]) + 1
        moment = message.get("time") or ""
        if cutoff is not None and _parse_ns(moment) is not None and (_parse_ns(moment) or 0) < cutoff:
            continue
        received += 1
        last = time.monotonic()
        data = base64.b64decode(message.get("data") or "")
        if p["raw"]:
            out(data.decode("utf-8", "replace"))
        else:
            when = parse_time(moment)
            out(f"[#{received}] Received JetStream message (direct): stream: {stream} seq "
                f"{message['seq']} / subject: {message.get('subject')} / time: "
                f"{when.local() if when else ''}")
            if not p["subjects_only"]:
                headers = dict(decode_headers(base64.b64decode(message["hdrs"]))) \
                    if message.get("hdrs") else {}
                for key, value in headers.items():
                    out(f"{key}: {value}")
                if headers:
                    out()
                if not p["headers_only"]:
                    out(body_text(data))
                    out()
        if p["count"] and received >= p["count"]:
            return


def _parse_ns(value: object) -> int | None:
    moment = parse_time(value)
    return moment.unix_nanos() if moment is not None else None


def _print_js(msg: Msg, counter: int, p: dict[str, Any]) -> int | None:
    meta = ack_metadata(msg)
    if p["raw"]:
        out(msg.data.decode("utf-8", "replace"))
        return meta[3] if meta else None
    tokens = (msg.reply or "").split(".")
    stream = tokens[2] if len(tokens) == 9 else (tokens[4] if len(tokens) >= 12 else "")
    moment = ""
    if len(tokens) >= 9:
        try:
            stamp = int(tokens[7] if len(tokens) == 9 else tokens[9])
            moment = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp / 1e9))
        except ValueError:
            moment = ""
    seq = meta[2] if meta else 0
    pending = meta[3] if meta else 0
    out(f"[#{counter}] Received JetStream message: stream: {stream} seq: {seq:,} / pending: "
        f"{pending:,} / subject: {msg.subject} / time: {moment}")
    if not p["subjects_only"]:
        print_headers_and_body(msg, p["headers_only"])
    return pending
