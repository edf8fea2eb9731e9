"""The consumer lifecycle verbs: `consumer add`, `edit`, `ls`, `info`, `state`, `rm`.

Each click command checks its flags and hands a coroutine to `run()`; the coroutine does the
work on a connected `Session`. Output: natscli's consumer information, or the server's
answer with `--json`.
"""

from __future__ import annotations

from typing import Any

import click

from ...errors import CliError
from ...prompts import confirm
from ...render import Nanos, Table, to_json
from ...session import Session, connection_options, out, run
from ...units import parse_time
from .._shared import config_diff, since_ns
from .config import edit_config, prepare_config
from .flags import create_flags
from .lookup import consumer_exists, pick
from .show import show_consumer_info


@click.command("add")
@click.argument("stream", required=False)
@click.argument("consumer_name", metavar="CONSUMER", required=False)
@create_flags(edit=False)
@connection_options()
@click.pass_context
def add(ctx: click.Context, stream: str | None, consumer_name: str | None, **p: Any) -> None:
    """Creates a new consumer"""
    p["consumer"] = consumer_name
    show_all = bool(ctx.meta.get("consumer.all"))
    run(ctx, lambda s: add_consumer(s, stream, show_all, p))


async def add_consumer(s: Session, stream: str | None, show_all: bool, p: dict[str, Any]) -> None:
    name, _ = await pick(s, stream, None, show_all, want_consumer=False)
    cfg = prepare_config(p)
    if p["output"]:
        with open(p["output"], "w") as handle:
            handle.write(to_json(cfg))
        return
    info = await s.js.consumer_create(name, cfg)
    show_consumer_info(info, p["as_json"])


@click.command("edit")
@click.argument("stream", required=False)
@click.argument("consumer_name", metavar="CONSUMER", required=False)
@create_flags(edit=True)
@connection_options()
@click.pass_context
def edit(ctx: click.Context, stream: str | None, consumer_name: str | None, **p: Any) -> None:
    """Edits the configuration of a consumer"""
    show_all = bool(ctx.meta.get("consumer.all"))
    run(ctx, lambda s: edit_consumer(s, stream, consumer_name, show_all, p))


async def edit_consumer(s: Session, stream: str | None, consumer_name: str | None,
                        show_all: bool, p: dict[str, Any]) -> int:
    """Shows the difference, asks, updates; exit status 1 for a `--dry-run` with changes."""
    sname, cname = await pick(s, stream, consumer_name, show_all)
    current = (await consumer_exists(s, sname, cname))["config"]
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


@click.command("ls")
@click.argument("stream", required=False)
@click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
@click.option("-n", "--names", is_flag=True, help="Show just the consumer names")
@connection_options()
@click.pass_context
def ls(ctx: click.Context, stream: str | None, as_json: bool, names: bool) -> None:
    """List known consumers"""
    show_all = bool(ctx.meta.get("consumer.all"))
    run(ctx, lambda s: list_consumers(s, stream, show_all, as_json, names))


async def list_consumers(s: Session, stream: str | None, show_all: bool, as_json: bool,
                         names: bool) -> None:
    sname, _ = await pick(s, stream, None, show_all, want_consumer=False)
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
    table = Table("Consumers", ["Name", "Description", "Created", "Ack Pending", "Unprocessed",
                                "Last Delivery"])
    for info in await s.js.consumer_list(sname):
        created = parse_time(info.get("created"))
        delivered = (info.get("delivered") or {}).get("last_active")
        table.add_row(info.get("name", ""), (info.get("config") or {}).get("description", ""),
                      created.local() if created else "", int(info.get("num_ack_pending") or 0),
                      int(info.get("num_pending") or 0), Nanos(since_ns(info, delivered)))
    out(table.render())
    out()


@click.command("info")
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
    run(ctx, lambda s: show_consumer(s, stream, consumer_name, show_all, as_json, state_only))


async def show_consumer(s: Session, stream: str | None, consumer_name: str | None,
                        show_all: bool, as_json: bool, state_only: bool) -> None:
    sname, cname = await pick(s, stream, consumer_name, show_all)
    show_consumer_info(await consumer_exists(s, sname, cname), as_json, state_only)


@click.command("state")
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


@click.command("rm")
@click.argument("stream", required=False)
@click.argument("consumer_name", metavar="CONSUMER", required=False)
@click.option("-f", "--force", is_flag=True, help="Force removal without prompting")
@connection_options()
@click.pass_context
def rm(ctx: click.Context, stream: str | None, consumer_name: str | None, force: bool) -> None:
    """Removes a consumer"""
    if force and not (stream and consumer_name):
        raise CliError("--force requires a stream and consumer name")
    show_all = bool(ctx.meta.get("consumer.all"))
    run(ctx, lambda s: remove_consumer(s, stream, consumer_name, show_all, force))


async def remove_consumer(s: Session, stream: str | None, consumer_name: str | None,
                          show_all: bool, force: bool) -> None:
    sname, cname = await pick(s, stream, consumer_name, show_all)
    await consumer_exists(s, sname, cname)
    if not force and not confirm(f"Really delete Consumer {sname} > {cname}", False):
        return
    await s.js.consumer_delete(sname, cname)
