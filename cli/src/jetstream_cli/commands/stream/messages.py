"""The message verbs of `stream`: `get` (one stored message, by sequence or the last of a
subject), `rmm` (remove one message) and `view` (natscli's pager over a stream's messages).

Each click command checks its flags and hands a coroutine to `run()`. `get` prints natscli's
`Item: STREAM#SEQ received ...` text (or the server's answer with `--json`); `view` prints
`size` messages a page and asks "Next Page?" between pages on stdin, ending at the end of the
stream.
"""

from __future__ import annotations

import base64
import time

import click

from ...errors import ApiError, CliError
from ...jsapi import JsonDict
from ...prompts import ask_input, confirm
from ...render import Nanos, cell, to_json
from ...session import Session, connection_options, log, out, run
from ...units import parse_time
from .._messages import body_text, decode_headers
from .._shared import DURATION
from .lookup import pick_stream, stream_exists


@click.command("get")
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
    run(ctx, lambda s: get_message(s, stream_name, show_all, seq, last_for, as_json))


async def get_message(s: Session, stream_name: str | None, show_all: bool, seq: int | None,
                      last_for: str | None, as_json: bool) -> None:
    name = await pick_stream(s, stream_name, show_all)
    wanted, subject = seq, last_for
    if wanted is None and not subject:
        wanted = int(ask_input("Message Sequence to retrieve", "-1", required=True))
        if wanted == -1:
            subject = ask_input("Subject to retrieve last message for")
    await stream_exists(s, name)
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


@click.command("rmm")
@click.argument("stream_name", metavar="STREAM", required=False)
@click.argument("seq", metavar="ID", type=int, required=False)
@click.option("-f", "--force", is_flag=True, help="Force removal without prompting")
@connection_options()
@click.pass_context
def rmm(ctx: click.Context, stream_name: str | None, seq: int | None, force: bool) -> None:
    """Securely removes an individual message from a stream"""
    show_all = bool(ctx.meta.get("stream.all"))
    run(ctx, lambda s: remove_message(s, stream_name, show_all, seq, force))


async def remove_message(s: Session, stream_name: str | None, show_all: bool, seq: int | None,
                         force: bool) -> None:
    name = await pick_stream(s, stream_name, show_all)
    wanted = seq if seq is not None else int(ask_input("Message Sequence to remove", required=True))
    if wanted <= 0:
        raise CliError("positive message ID required")
    await stream_exists(s, name)
    if not force and not confirm(f"Really remove message {wanted} from Stream {name}", False):
        return
    await s.js.msg_delete(name, wanted)


@click.command("view")
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
    run(ctx, lambda s: view_named_stream(s, stream_name, show_all, size, start_id, since, raw,
                                         subject))


async def view_named_stream(s: Session, stream_name: str | None, show_all: bool, size: int,
                            start_id: int, since: int | None, raw: bool,
                            subject: str | None) -> None:
    name = await pick_stream(s, stream_name, show_all)
    info = await stream_exists(s, name)
    await view_stream(s, info, size, start_id, since, raw, subject)


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
