"""`jetstream pub | sub | req | reply`: natscli's core NATS tools.

`pub SUBJECT [BODY]` publishes BODY (or stdin when no body is given) `--count` times,
running body, subject and header values through natscli's templates (`{{.Count}}`,
`{{ Count }}`, `{{ID}}`, ...); `-H K:V` adds headers; `-J` publishes to JetStream and
prints the acknowledgement. Status lines go to stderr as natscli's log lines
(`15:04:05 Published 11 bytes to "orders.new"`).

`sub` prints each message as natscli does (`[#1] Received on "subject"`, headers, body)
until `--count` messages or `--wait` of silence; with `--stream`/`--all`/`--new`/`--last`/
`--since`/`--start-sequence`/`--last-per-subject` it reads a stream through an ephemeral
consumer (acknowledgement none) and prints natscli's JetStream line.
`req` sends a request and prints the reply (or fails after `--timeout`); `reply` answers
requests with a body (templated, `{{Request}}` is the request body), an echo, or the output
of `--command`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shlex
import subprocess
import sys
import time
from typing import Any

import click
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from ..errors import STREAM_NOT_FOUND, ApiError, CliError
from ..jsapi import JsonDict
from ..render import Nanos, cell
from ..session import Session, connection_options, log, out, run
from ..templates import TemplateError, expand
from ..units import NANOS_PER_SECOND, parse_time, rfc3339_ns
from ._shared import DURATION, ack_metadata, parse_headers
from ._messages import body_text, decode_headers


def _templated(text: str, count: int, what: str, enabled: bool) -> str:
    if not enabled:
        return text
    try:
        return expand(text, count)
    except TemplateError as exc:
        log(f"Could not parse {what} template: {exc}")
        return text


def _read_stdin(send_on: str) -> list[str]:
    log("Reading payload from STDIN")
    data = sys.stdin.read()
    if send_on == "eof":
        return [data]
    return data.splitlines()


def _print_headers_and_body(msg: Msg, headers_only: bool) -> None:
    if msg.headers:
        for key, value in msg.headers.items():
            out(f"{key}: {value}")
        out()
    if not headers_only:
        out(body_text(msg.data))
        out()


def register(cli: click.Group) -> None:
    @cli.command("pub")
    @click.argument("subject")
    @click.argument("body", required=False)
    @click.option("--reply", metavar="SUBJECT", help="Sets a custom reply to subject")
    @click.option("-H", "--header", "headers", multiple=True, metavar="K:V",
                  help="Adds headers to the message using K:V format")
    @click.option("--count", type=int, default=1, help="Publish multiple messages")
    @click.option("--force-stdin", is_flag=True, help="Force reading from stdin")
    @click.option("-J", "--jetstream", is_flag=True, help="Publish messages to JetStream")
    @click.option("-q", "--quiet", is_flag=True, help="Show just the output received")
    @click.option("--send-on", type=click.Choice(["newline", "eof"]), default="eof",
                  help="When to send data from stdin: 'eof' (default) or 'newline'")
    @click.option("--sleep", type=DURATION, default=0,
                  help="When publishing multiple messages, sleep between publishes")
    @click.option("--templates/--no-templates", default=True,
                  help="Enables template functions in the body and subject "
                       "(does not affect headers)")
    @connection_options()
    @click.pass_context
    def pub(ctx: click.Context, subject: str, body: str | None, reply: str | None,
            headers: tuple[str, ...], count: int, force_stdin: bool, jetstream: bool,
            quiet: bool, send_on: str, sleep: int, templates: bool) -> None:
        """Generic data publish utility"""
        count = max(count, 1)
        bodies = [body] if body is not None and not force_stdin else _read_stdin(send_on)

        async def work(s: Session) -> None:
            for text in bodies:
                for i in range(1, count + 1):
                    started = time.monotonic()
                    data = _templated(text, i, "body", templates).encode()
                    subj = _templated(subject, i, "subject", templates)
                    hdrs = parse_headers(headers, i) or None
                    if jetstream:
                        await _publish_js(s, subj, data, hdrs, quiet)
                    else:
                        await s.nc.publish(subj, data, reply=reply or "", headers=hdrs)
                        await s.nc.flush(timeout=max(1, int(s.opts.timeout)))
                        if not quiet:
                            log(f'Published {len(data)} bytes to "{subj}"')
                    if count > 1 and sleep > 0:
                        rest = sleep / NANOS_PER_SECOND - (time.monotonic() - started)
                        if rest > 0:
                            await asyncio.sleep(rest)

        run(ctx, work)

    @cli.command("sub")
    @click.argument("subjects", nargs=-1)
    @click.option("--queue", help="Subscribe to a named queue group")
    @click.option("-r", "--raw", is_flag=True, help="Show the raw data received")
    @click.option("--ack/--no-ack", default=False,
                  help="Acknowledge JetStream message that have the correct metadata")
    @click.option("--count", type=int, default=0, help="Quit after receiving this many messages")
    @click.option("--headers-only", is_flag=True, help="Do not render any data, shows only headers")
    @click.option("--subjects-only", is_flag=True, help="Prints only the messages' subjects")
    @click.option("-i", "--inbox", is_flag=True, help="Subscribes to a generated inbox")
    @click.option("--start-sequence", type=int, default=0,
                  help="Starts at a specific Stream sequence (requires JetStream)")
    @click.option("--all", "deliver_all", is_flag=True,
                  help="Delivers all messages found in the Stream (requires JetStream)")
    @click.option("--new", "deliver_new", is_flag=True,
                  help="Delivers only future messages (requires JetStream)")
    @click.option("--last", "deliver_last", is_flag=True,
                  help="Delivers the most recent and all future messages (requires JetStream)")
    @click.option("--since", type=DURATION, default=None,
                  help="Delivers messages received since a duration like 1d3h5m2s "
                       "(requires JetStream)")
    @click.option("--last-per-subject", is_flag=True,
                  help="Deliver the most recent messages for each subject in the Stream "
                       "(requires JetStream)")
    @click.option("-T", "--terminate-at-end", is_flag=True,
                  help="Stops consuming messages from JetStream once all messages were received")
    @click.option("--stream", help="Subscribe to a specific stream (required JetStream)")
    @click.option("--wait", type=DURATION, default=0,
                  help="Unsubscribe after this amount of time without any traffic")
    @click.option("-t", "--timestamp", is_flag=True, help="Show timestamps in output")
    @connection_options()
    @click.pass_context
    def sub(ctx: click.Context, subjects: tuple[str, ...], **p: Any) -> None:
        """Generic subscription client"""
        jetstream = bool(p["start_sequence"] or p["deliver_all"] or p["deliver_new"]
                         or p["deliver_last"] or p["since"] is not None
                         or p["last_per_subject"] or p["stream"])
        if not subjects and not p["stream"] and not p["inbox"]:
            raise CliError("subject is required")
        if len(subjects) > 1 and jetstream:
            raise CliError("streams subscribe support only 1 subject")
        if p["terminate_at_end"] and not jetstream:
            raise CliError("--terminate-at-end is only supported for JetStream subscriptions")
        if p["queue"] and jetstream:
            raise CliError("queue group subscriptions are not supported with JetStream")
        if p["inbox"] and jetstream:
            raise CliError("generating inboxes is not compatible with JetStream subscriptions")

        async def work(s: Session) -> None:
            if jetstream:
                await _js_subscribe(s, subjects[0] if subjects else None, p)
            else:
                await _core_subscribe(s, list(subjects), p)

        run(ctx, work)

    @cli.command("req")
    @click.argument("subject")
    @click.argument("body", required=False)
    @click.option("-r", "--raw", is_flag=True, help="Show just the output received")
    @click.option("-H", "--header", "headers", multiple=True,
                  help="Adds headers to the message using K:V format")
    @click.option("--count", type=int, default=1, help="Publish multiple messages")
    @click.option("--replies", type=int, default=1,
                  help="Wait for multiple replies from services. 0 waits until timeout")
    @click.option("--reply-timeout", type=DURATION, default="300ms",
                  help="Maximum time between replies when waiting for more than one")
    @click.option("--templates/--no-templates", default=True,
                  help="Enables template functions in the body and subject")
    @connection_options()
    @click.pass_context
    def req(ctx: click.Context, subject: str, body: str | None, raw: bool,
            headers: tuple[str, ...], count: int, replies: int, reply_timeout: int,
            templates: bool) -> None:
        """Generic request-reply request utility"""
        text = body if body is not None else _read_stdin("eof")[0]

        async def work(s: Session) -> None:
            for i in range(1, max(count, 1) + 1):
                subj = _templated(subject, i, "subject", templates)
                data = _templated(text, i, "body", templates).encode()
                await _request(s, subj, data, parse_headers(headers, i) or None, raw, replies,
                               reply_timeout / NANOS_PER_SECOND)

        run(ctx, work)

    @cli.command("reply")
    @click.argument("subject")
    @click.argument("body", required=False, default="")
    @click.option("--echo", is_flag=True, help="Echo back what is received")
    @click.option("--command", help="Runs a command and responds with the output if exit code was 0")
    @click.option("-q", "--queue", default="NATS-RPLY-22", help="Queue group name")
    @click.option("-H", "--header", "headers", multiple=True,
                  help="Adds headers to the message using K:V format")
    @click.option("--count", type=int, default=0, help="Quit after receiving this many messages")
    @connection_options()
    @click.pass_context
    def reply(ctx: click.Context, subject: str, body: str, echo: bool, command: str | None,
              queue: str, headers: tuple[str, ...], count: int) -> None:
        """Generic service reply utility"""
        if not body and not command and not echo:
            log("No body or command supplied, enabling echo mode")
            echo = True

        async def work(s: Session) -> None:
            await _serve(s, subject, body, echo, command, queue, headers, count)

        run(ctx, work)


async def _publish_js(s: Session, subject: str, data: bytes, headers: dict[str, str] | None,
                      quiet: bool) -> None:
    if not quiet:
        log(f'Published {len(data)} bytes to "{subject}"')
    try:
        msg = await s.nc.request(subject, data, timeout=s.opts.timeout, headers=headers)
    except NoRespondersError as exc:
        raise CliError(f"no stream is listening on {subject!r} (no responders)") from exc
    except NatsTimeoutError as exc:
        raise CliError(f"no acknowledgement for {subject!r} within {s.opts.timeout:g}s") from exc
    try:
        ack = json.loads(msg.data)
    except ValueError as exc:
        raise CliError(f"invalid publish acknowledgement: {msg.data[:200]!r}") from exc
    if isinstance(ack, dict) and ack.get("error"):
        error = ack["error"]
        raise ApiError(int(error.get("code", 0)), int(error.get("err_code", 0)),
                       str(error.get("description", "")))
    if not quiet:
        line = f"Stored in Stream: {ack.get('stream')} Sequence: {int(ack.get('seq') or 0):,}"
        if ack.get("domain"):
            line += f' Domain: "{ack["domain"]}"'
        if ack.get("duplicate"):
            line += " Duplicate: true"
        log(line)


async def _core_subscribe(s: Session, subjects: list[str], p: dict[str, Any]) -> None:
    if p["inbox"] and not subjects:
        subjects = [s.nc.new_inbox()]
    done = asyncio.Event()
    received = 0
    last = time.monotonic()

    async def handler(msg: Msg) -> None:
        nonlocal received, last
        received += 1
        last = time.monotonic()
        if p["raw"]:
            out(msg.data.decode("utf-8", "replace"))
        else:
            stamp = f" @ {time.strftime('%b %d %H:%M:%S')}" if p["timestamp"] else ""
            line = f'[#{received}]{stamp} Received on "{msg.subject}"'
            if msg.reply:
                line += f' with reply "{msg.reply}"'
            out(line)
            if not p["subjects_only"]:
                _print_headers_and_body(msg, p["headers_only"])
        if p["ack"] and msg.reply.startswith("$JS.ACK."):
            await s.nc.publish(msg.reply, b"")
        if p["count"] and received >= p["count"]:
            done.set()

    for subject in subjects:
        await s.nc.subscribe(subject, queue=p["queue"] or "", cb=handler)
    await s.nc.flush()
    if not p["raw"]:
        log(f"Subscribing on {', '.join(subjects)}")
    await _wait(done, p["wait"], lambda: last)


async def _wait(done: asyncio.Event, wait_ns: int, last_seen: Any) -> None:
    """Until `done`, or `wait_ns` without traffic when given."""
    if not wait_ns:
        await done.wait()
        return
    idle = wait_ns / NANOS_PER_SECOND
    while not done.is_set():
        remaining = idle - (time.monotonic() - last_seen())
        if remaining <= 0:
            return
        try:
            await asyncio.wait_for(done.wait(), remaining)
        except asyncio.TimeoutError:
            continue


async def _js_subscribe(s: Session, subject: str | None, p: dict[str, Any]) -> None:
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
        log(f"{what} since {cell_duration(p['since'])}")
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


def cell_duration(nanos: int) -> str:
    return cell(Nanos(nanos))


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
        _print_headers_and_body(msg, p["headers_only"])
    return pending


async def _request(s: Session, subject: str, data: bytes, headers: dict[str, str] | None,
                   raw: bool, replies: int, reply_timeout: float) -> None:
    if not raw:
        log(f'Sending request on "{subject}"')
    inbox = s.nc.new_inbox()
    sub = await s.nc.subscribe(inbox)
    started = time.monotonic()
    await s.nc.publish(subject, data, reply=inbox, headers=headers)
    timeout = s.opts.timeout
    got = 0
    total_rtt = 0.0
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=max(timeout, 0.001))
            except asyncio.TimeoutError as exc:
                if got:
                    return
                raise CliError(f"no reply received on {subject!r} within "
                               f"{s.opts.timeout:g}s") from exc
            if (msg.headers or {}).get("Status") == "503" and not msg.data:
                log("No responders are available")
                return
            rtt = time.monotonic() - started
            if raw:
                out(body_text(msg.data))
            else:
                log(f"Received with rtt {cell_duration(int(rtt * NANOS_PER_SECOND))}")
                for key, value in (msg.headers or {}).items():
                    log(f"{key}: {value}")
                out(body_text(msg.data))
                out()
            got += 1
            if replies > 0 and (got == replies or not msg.data):
                return
            if replies == 0:
                timeout = s.opts.timeout - (time.monotonic() - started)
            else:
                total_rtt += rtt
                timeout = total_rtt / got + reply_timeout
    finally:
        await sub.unsubscribe()


async def _serve(s: Session, subject: str, body: str, echo: bool, command: str | None,
                 queue: str, headers: tuple[str, ...], count: int) -> None:
    done = asyncio.Event()
    served = 0

    async def handler(msg: Msg) -> None:
        nonlocal served
        log(f'[#{served}] Received on subject "{msg.subject}":')
        for key, value in (msg.headers or {}).items():
            log(f"{key}: {value}")
        out()
        out(msg.data.decode("utf-8", "replace"))
        reply_headers = parse_headers(headers, served)
        request = msg.data.decode("utf-8", "replace")
        if echo:
            payload = msg.data
            reply_headers = {**(msg.headers or {}), **reply_headers,
                             "NATS-Reply-Counter": str(served)}
        elif command:
            payload = await _run_command(command, msg.subject, request, served)
        else:
            try:
                payload = expand(body, served, request=request).encode()
            except TemplateError as exc:
                log(f"Could not parse body template: {exc}")
                payload = body.encode()
        if msg.reply:
            await s.nc.publish(msg.reply, payload, headers=reply_headers or None)
        served += 1
        if count and served >= count:
            await s.nc.flush()
            done.set()

    await s.nc.subscribe(subject, queue=queue, cb=handler)
    await s.nc.flush()
    log(f'Listening on "{subject}" in group "{queue}"')
    await done.wait()


async def _run_command(command: str, subject: str, request: str, served: int) -> bytes:
    raw = command
    for i, token in enumerate(subject.split(".")):
        raw = raw.replace(f"{{{{{i}}}}}", token)
    try:
        raw = expand(raw, served, request=request)
    except TemplateError as exc:
        log(f"Could not parse command template: {exc}")
    try:
        argv = shlex.split(raw)
    except ValueError as exc:
        log(f"Could not parse command: {exc}")
        return b""
    env = {"NATS_REQUEST_SUBJECT": subject, "NATS_REQUEST_BODY": request}
    result = await asyncio.to_thread(
        subprocess.run, argv, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, env={**os.environ, **env}, check=False)
    if result.returncode != 0:
        log(f'Command "{raw}" failed to run: exit status {result.returncode}')
    return result.stdout

