"""`stream backup` and `stream restore`: the flags of natscli's commands, over the snapshot
protocol in `jetstream_cli.snapshot` (which writes and reads natscli's directory layout).

`--progress/--no-progress` (natscli's flag, on by default): a progress line on stderr while the
data moves, drawn only when stderr is a terminal (`jetstream_cli.progress`).
"""

from __future__ import annotations

import click

from ... import snapshot
from ...jsapi import JsonDict
from ...session import Session, connection_options, run
from .._shared import BYTES, load_json_file
from .lookup import stream_exists
from .show import show_stream_info


@click.command("backup")
@click.argument("stream_name", metavar="STREAM")
@click.argument("target")
@click.option("--progress/--no-progress", default=True,
              help="Enables or disables progress reporting using a progress bar")
@click.option("--check", is_flag=True, help="Checks the stream for health prior to backup")
@click.option("--consumers/--no-consumers", default=True,
              help="Enable or disable consumer backups")
@click.option("--chunk-size", type=BYTES, default=None,
              help="Sets a specific chunk size that the server will send")
@click.option("--window-size", type=BYTES, default=None,
              help="Sets a specific window size that the server will send")
@connection_options()
@click.pass_context
def backup(ctx: click.Context, stream_name: str, target: str, progress: bool, check: bool,
           consumers: bool, chunk_size: int | None, window_size: int | None) -> None:
    """Creates a backup of a stream over the NATS network"""
    run(ctx, lambda s: backup_stream(s, stream_name, target, consumers, check, chunk_size,
                                     window_size, progress))


async def backup_stream(s: Session, stream_name: str, target: str, consumers: bool, check: bool,
                        chunk_size: int | None, window_size: int | None,
                        progress: bool = False) -> None:
    info = await stream_exists(s, stream_name)
    await snapshot.backup(s, info, target, consumers=consumers, check=check,
                          chunk_size=chunk_size, window_size=window_size, progress=progress)


@click.command("restore")
@click.argument("directory", metavar="FILE", type=click.Path(exists=True, file_okay=False))
@click.option("--progress/--no-progress", default=True,
              help="Enables or disables progress reporting using a progress bar")
@click.option("--config", type=click.Path(exists=True, dir_okay=False),
              help="Load a different configuration when restoring the stream")
@click.option("--cluster", help="Place the stream in a specific cluster")
@click.option("--tag", multiple=True, help="Place the stream on servers that has specific tags")
@click.option("--replicas", type=int, default=0,
              help="Override how many replicas of the data to create")
@connection_options()
@click.pass_context
def restore(ctx: click.Context, directory: str, progress: bool, config: str | None,
            cluster: str | None, tag: tuple[str, ...], replicas: int) -> None:
    """Restore a stream over the NATS network"""
    run(ctx, lambda s: restore_stream(s, directory, config, cluster, list(tag), replicas,
                                      progress))


async def restore_stream(s: Session, directory: str, config: str | None, cluster: str | None,
                         tags: list[str], replicas: int, progress: bool = False) -> None:
    override: JsonDict | None = load_json_file(config, "configuration") if config else None
    info = await snapshot.restore(s, directory, override, cluster, tags, replicas,
                                  progress=progress)
    show_stream_info(info, False)
