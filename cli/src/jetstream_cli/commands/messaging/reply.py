"""`jetstream reply SUBJECT [BODY]`: natscli's service tool. Answers requests in a queue
group with a body (templated; `{{Request}}` is the request body), an echo of the request
(`--echo`, the default without a body or command), or the output of `--command` (run with the
request in `NATS_REQUEST_SUBJECT` / `NATS_REQUEST_BODY`); stops after `--count` requests or
when interrupted (exit status 130)."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess

import click
from nats.aio.msg import Msg

from ...session import Session, connection_options, log, out, run
from ...templates import TemplateError, expand
from .._shared import parse_headers


@click.command("reply")
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
    run(ctx, lambda s: serve(s, subject, body, echo, command, queue, headers, count))


async def serve(s: Session, subject: str, body: str, echo: bool, command: str | None,
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
