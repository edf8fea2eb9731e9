"""`jetstream req SUBJECT [BODY]`: natscli's request tool. Sends a request (body templated,
from stdin when none is given) and prints the reply with its round-trip time, waiting for
`--replies` answers (0: until the timeout); fails after `--timeout` without one."""

from __future__ import annotations

import asyncio
import time

import click

from ...errors import CliError
from ...render import Nanos, cell
from ...session import Session, connection_options, log, out, run
from ...units import NANOS_PER_SECOND
from .._messages import body_text
from .._shared import DURATION, parse_headers
from .bodies import read_stdin, templated


@click.command("req")
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
    text = body if body is not None else read_stdin("eof")[0]
    run(ctx, lambda s: request_all(s, subject, text, headers, max(count, 1), templates, raw,
                                   replies, reply_timeout / NANOS_PER_SECOND))


async def request_all(s: Session, subject: str, text: str, headers: tuple[str, ...], count: int,
                      templates: bool, raw: bool, replies: int, reply_timeout: float) -> None:
    for i in range(1, count + 1):
        subj = templated(subject, i, "subject", templates)
        data = templated(text, i, "body", templates).encode()
        await request(s, subj, data, parse_headers(headers, i) or None, raw, replies,
                      reply_timeout)


async def request(s: Session, subject: str, data: bytes, headers: dict[str, str] | None,
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
                log(f"Received with rtt {cell(Nanos(int(rtt * NANOS_PER_SECOND)))}")
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
