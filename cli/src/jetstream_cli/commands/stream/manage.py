"""The stream lifecycle verbs: `stream add`, `ls`, `info`, `state`, `edit`, `rm`, `purge`.

Each click command checks its flags and hands a coroutine to `run()`; the coroutine does the
work on a connected `Session`. Output: natscli's text (`Stream X was created` and the stream
information), or the server's answer with `--json`.
"""

from __future__ import annotations

from typing import Any

import click

from ...errors import STREAM_NOT_FOUND, ApiError, CliError
from ...jsapi import JsonDict
from ...prompts import confirm
from ...render import Nanos, Table, to_json
from ...session import Session, connection_options, out, run
from ...units import ibytes, parse_time
from .._shared import config_diff, is_internal_stream, since_ns
from .config import edit_config, prepare_config
from .flags import create_flags
from .lookup import pick_stream, stream_exists
from .show import show_stream_info


@click.command("add")
@click.argument("stream_name", metavar="STREAM", required=False)
@create_flags(edit=False)
@connection_options()
@click.pass_context
def add(ctx: click.Context, stream_name: str | None, **p: Any) -> None:
    """Create a new stream"""
    p["stream"] = stream_name
    for key in ("no_mirror", "no_transform", "no_republish"):
        p.setdefault(key, False)
    run(ctx, lambda s: add_stream(s, p))


async def add_stream(s: Session, p: dict[str, Any]) -> None:
    limits = (await s.js.account_info()).get("limits") or {}
    cfg = prepare_config(p, bool(limits.get("max_bytes_required")))
    if p["output"]:
        with open(p["output"], "w") as handle:
            handle.write(to_json(cfg))
        return
    info = await s.js.stream_create(cfg)
    if not p["as_json"]:
        out(f"Stream {cfg['name']} was created\n")
    show_stream_info(info, p["as_json"])


@click.command("ls")
@click.option("-a", "--all", "show_all", is_flag=True,
              help="When listing or selecting streams show all streams including system ones")
@click.option("--subject", help="Limit the list to streams with matching subjects")
@click.option("-n", "--names", is_flag=True, help="Show just the stream names")
@click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
@connection_options()
@click.pass_context
def ls(ctx: click.Context, show_all: bool, subject: str | None, names: bool,
       as_json: bool) -> None:
    """List all known streams"""
    show_all = show_all or bool(ctx.meta.get("stream.all"))
    run(ctx, lambda s: list_streams(s, show_all, subject, names, as_json))


async def list_streams(s: Session, show_all: bool, subject: str | None, names: bool,
                       as_json: bool) -> None:
    if names:
        listed = await s.js.stream_names(subject)
        out(to_json(listed) if as_json else "\n".join(listed))
        return
    infos = await s.js.stream_list(subject)
    shown = [i for i in infos if show_all or not is_internal_stream(i["config"]["name"])]
    if as_json:
        out(to_json([i["config"]["name"] for i in shown]))
        return
    if not shown:
        out("No Streams defined, pass -a to include system streams" if infos
            else "No Streams defined")
        return
    shown.sort(key=lambda i: int((i.get("state") or {}).get("bytes") or 0))
    title = f"Streams matching {subject}" if subject else "Streams"
    table = Table(title, ["Name", "Description", "Created", "Messages", "Size", "Last Message"])
    for info in shown:
        cfg, state = info["config"], info.get("state") or {}
        created = parse_time(info.get("created"))
        table.add_row(cfg["name"], cfg.get("description", ""),
                      created.local() if created else "",
                      f"{int(state.get('messages') or 0):,}",
                      ibytes(int(state.get("bytes") or 0)),
                      Nanos(since_ns(info, state.get("last_ts"))))
    out(table.render())
    out()


@click.command("info")
@click.argument("stream_name", metavar="STREAM", required=False)
@click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
@click.option("--state", "state_only", is_flag=True, help="Shows only the stream state")
@connection_options()
@click.pass_context
def info(ctx: click.Context, stream_name: str | None, as_json: bool, state_only: bool) -> None:
    """Stream information"""
    show_all = bool(ctx.meta.get("stream.all"))
    run(ctx, lambda s: show_stream(s, stream_name, show_all, as_json, state_only))


async def show_stream(s: Session, stream_name: str | None, show_all: bool, as_json: bool,
                      state_only: bool) -> None:
    name = await pick_stream(s, stream_name, show_all)
    show_stream_info(await stream_exists(s, name), as_json, state_only)
    if not as_json:
        out()


@click.command("state")
@click.argument("stream_name", metavar="STREAM", required=False)
@click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
@connection_options()
@click.pass_context
def state(ctx: click.Context, stream_name: str | None, as_json: bool) -> None:
    """Stream state"""
    ctx.invoke(info, stream_name=stream_name, as_json=as_json, state_only=True)


@click.command("edit")
@click.argument("stream_name", metavar="STREAM", required=False)
@create_flags(edit=True)
@connection_options()
@click.pass_context
def edit(ctx: click.Context, stream_name: str | None, **p: Any) -> None:
    """Edits an existing stream"""
    show_all = bool(ctx.meta.get("stream.all"))
    run(ctx, lambda s: edit_stream(s, stream_name, show_all, p))


async def edit_stream(s: Session, stream_name: str | None, show_all: bool,
                      p: dict[str, Any]) -> int:
    """Shows the difference, asks, updates; exit status 1 for a `--dry-run` with changes."""
    name = await pick_stream(s, stream_name, show_all)
    current = (await stream_exists(s, name))["config"]
    new = edit_config(current, p)
    diff = config_diff(current, new)
    if not diff:
        if not p["dry_run"]:
            out("No difference in configuration")
        return 0
    out(f"Differences (-old +new):\n{diff}")
    if p["dry_run"]:
        return 1
    if not p["force"] and not confirm(f"Really edit Stream {name}", False):
        return 0
    updated = await s.js.stream_update(new)
    if not p["as_json"]:
        out(f"Stream {name} was updated\n")
    show_stream_info(updated, p["as_json"])
    return 0


@click.command("rm")
@click.argument("stream_name", metavar="STREAM", required=False)
@click.option("-f", "--force", is_flag=True, help="Force removal without prompting")
@connection_options()
@click.pass_context
def rm(ctx: click.Context, stream_name: str | None, force: bool) -> None:
    """Removes a stream"""
    if force and not stream_name:
        raise CliError("--force requires a stream name")
    show_all = bool(ctx.meta.get("stream.all"))
    run(ctx, lambda s: remove_stream(s, stream_name, show_all, force))


async def remove_stream(s: Session, stream_name: str | None, show_all: bool,
                        force: bool) -> None:
    name = await pick_stream(s, stream_name, show_all)
    if not force:
        await stream_exists(s, name)
        if not confirm(f"Really delete Stream {name}", False):
            return
    try:
        await s.js.stream_delete(name)
    except ApiError as exc:
        if exc.err_code == STREAM_NOT_FOUND:
            raise CliError(f"stream {name!r} not found") from exc
        raise


@click.command("purge")
@click.argument("stream_name", metavar="STREAM", required=False)
@click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
@click.option("-f", "--force", is_flag=True, help="Force removal without prompting")
@click.option("--subject", help="Limits the purge to a specific subject")
@click.option("--seq", type=int, default=0,
              help="Purge up to but not including a specific message sequence")
@click.option("--keep", type=int, default=0,
              help="Keeps a certain number of messages after the purge")
@connection_options()
@click.pass_context
def purge(ctx: click.Context, stream_name: str | None, as_json: bool, force: bool,
          subject: str | None, seq: int, keep: int) -> None:
    """Bulk removes messages from a stream"""
    show_all = bool(ctx.meta.get("stream.all"))
    if seq and keep:
        raise CliError("sequence and keep cannot be combined when purging")
    body: JsonDict | None = None
    if keep or subject or seq:
        body = {k: v for k, v in (("filter", subject), ("seq", seq), ("keep", keep)) if v}
    run(ctx, lambda s: purge_stream(s, stream_name, show_all, force, body, as_json))


async def purge_stream(s: Session, stream_name: str | None, show_all: bool, force: bool,
                       body: JsonDict | None, as_json: bool) -> None:
    name = await pick_stream(s, stream_name, show_all)
    await stream_exists(s, name)
    if not force and not confirm(f"Really purge Stream {name}", False):
        return
    answer = await s.js.stream_purge(name, body)
    if not as_json:
        out(f"Purged {int(answer.get('purged') or 0)} messages from {name}\n")
    show_stream_info(await s.js.stream_info(name), as_json, state_only=True)
