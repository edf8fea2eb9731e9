"""`consumer next`: natscli's non-interactive pull. One message a request (`--count`
requests); the first request waits up to `--timeout` for a message, the following ones take
only what is already pending, so `--count 3` on a stream with one message prints it and stops.
Each message is printed with natscli's line
`[15:04:05] subj: ... / tries: ... / cons seq: ... / str seq: ... / pending: ...` and
acknowledged unless `--no-ack` (or answered `--nak` / `--term`).
"""

from __future__ import annotations

import asyncio
import json
import time

import click
from nats.aio.msg import Msg

from ...errors import CliError
from ...jsapi import JsonDict
from ...session import Session, connection_options, log, out, run
from .._shared import ack_metadata
from .lookup import consumer_exists


@click.command("next")
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
    run(ctx, lambda s: pull_next(s, stream, consumer_name, max(count, 1), do_ack, nak, term, raw))


async def pull_next(s: Session, stream: str, consumer: str, count: int, ack: bool, nak: bool,
                    term: bool, raw: bool) -> None:
    info = await consumer_exists(s, stream, consumer)
    if (info.get("config") or {}).get("deliver_subject"):
        raise CliError(f"consumer {consumer!r} is not a Pull consumer")
    await next_messages(s, stream, consumer, count, ack, nak, term, raw)


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
