"""`jetstream pub SUBJECT [BODY]`: natscli's publish tool.

Publishes BODY (or stdin when no body is given) `--count` times, running body and subject
through natscli's templates (`{{.Count}}`, `{{ Count }}`, `{{ID}}`, ...) and header values
too; `-H K:V` adds headers; `-J` publishes to JetStream and prints the acknowledgement.
Status lines go to stderr as natscli's log lines (`15:04:05 Published 11 bytes to
"orders.new"`). `publish_all` is the loop over every message sent.

With `--count` above 20, as natscli, a progress line (messages sent of all, rate, time left)
replaces the per-message lines, on stderr and only when stderr is a terminal; elsewhere (a
pipe, a file, `--no-progress`, a flag natscli's `pub` lacks) the lines are printed as before.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import click
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from ...errors import ApiError, CliError
from ...progress import ProgressLine
from ...session import Session, connection_options, log, run
from ...units import NANOS_PER_SECOND
from .._shared import DURATION, parse_headers
from .bodies import read_stdin, templated

PROGRESS_ABOVE = 20  # natscli draws its progress bar for a --count above this


@dataclass(frozen=True)
class Publishing:
    """What `pub` sends, from its flags: each body `count` times to `subject`."""

    subject: str
    bodies: list[str]
    count: int
    headers: tuple[str, ...]
    reply: str
    jetstream: bool
    quiet: bool
    sleep_ns: int
    templates: bool
    progress: bool


@click.command("pub")
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
@click.option("--progress/--no-progress", default=True,
              help=f"Shows a progress line instead of a line per message when --count is above "
                   f"{PROGRESS_ABOVE} and stderr is a terminal")
@connection_options()
@click.pass_context
def pub(ctx: click.Context, subject: str, body: str | None, reply: str | None,
        headers: tuple[str, ...], count: int, force_stdin: bool, jetstream: bool,
        quiet: bool, send_on: str, sleep: int, templates: bool, progress: bool) -> None:
    """Generic data publish utility"""
    bodies = [body] if body is not None and not force_stdin else read_stdin(send_on)
    plan = Publishing(subject=subject, bodies=bodies, count=max(count, 1), headers=headers,
                      reply=reply or "", jetstream=jetstream, quiet=quiet, sleep_ns=sleep,
                      templates=templates, progress=progress)
    run(ctx, lambda s: publish_all(s, plan))


async def publish_all(s: Session, plan: Publishing) -> None:
    bar = ProgressLine("Published", plan.count * len(plan.bodies),
                       enabled=plan.progress and plan.count > PROGRESS_ABOVE)
    quiet = plan.quiet or bar.active
    with bar:
        for text in plan.bodies:
            for i in range(1, plan.count + 1):
                await publish_one(s, plan, text, i, quiet)
                bar.advance()


async def publish_one(s: Session, plan: Publishing, text: str, i: int, quiet: bool) -> None:
    started = time.monotonic()
    data = templated(text, i, "body", plan.templates).encode()
    subject = templated(plan.subject, i, "subject", plan.templates)
    headers = parse_headers(plan.headers, i) or None
    if plan.jetstream:
        await publish_to_jetstream(s, subject, data, headers, quiet)
    else:
        await s.nc.publish(subject, data, reply=plan.reply, headers=headers)
        await s.nc.flush(timeout=max(1, int(s.opts.timeout)))
        if not quiet:
            log(f'Published {len(data)} bytes to "{subject}"')
    if plan.count > 1 and plan.sleep_ns > 0:
        rest = plan.sleep_ns / NANOS_PER_SECOND - (time.monotonic() - started)
        if rest > 0:
            await asyncio.sleep(rest)


async def publish_to_jetstream(s: Session, subject: str, data: bytes, headers: dict[str, str] | None,
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
