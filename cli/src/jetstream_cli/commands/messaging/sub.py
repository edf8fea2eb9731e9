"""`jetstream sub SUBJECT...`: natscli's subscription tool.

Prints each message as natscli does (`[#1] Received on "subject"`, headers, body) until
`--count` messages or `--wait` of silence. With `--stream` / `--all` / `--new` / `--last` /
`--since` / `--start-sequence` / `--last-per-subject` it reads a stream instead
(`stream_sub`). Interrupting it (Ctrl-C) exits with status 130.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import click
from nats.aio.msg import Msg

from ...errors import CliError
from ...session import Session, connection_options, log, out, run
from ...units import NANOS_PER_SECOND
from .._messages import print_headers_and_body
from .._shared import DURATION
from .stream_sub import subscribe_to_stream


@click.command("sub")
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
    if jetstream:
        run(ctx, lambda s: subscribe_to_stream(s, subjects[0] if subjects else None, p))
    else:
        run(ctx, lambda s: subscribe(s, list(subjects), p))


async def subscribe(s: Session, subjects: list[str], p: dict[str, Any]) -> None:
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
                print_headers_and_body(msg, p["headers_only"])
        if p["ack"] and msg.reply.startswith("$JS.ACK."):
            await s.nc.publish(msg.reply, b"")
        if p["count"] and received >= p["count"]:
            done.set()

    for subject in subjects:
        await s.nc.subscribe(subject, queue=p["queue"] or "", cb=handler)
    await s.nc.flush()
    if not p["raw"]:
        log(f"Subscribing on {', '.join(subjects)}")
    await wait_until_done(done, p["wait"], lambda: last)


async def wait_until_done(done: asyncio.Event, wait_ns: int, last_seen: Any) -> None:
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
