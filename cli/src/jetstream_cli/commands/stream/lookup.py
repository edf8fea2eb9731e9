"""Finding the stream a command names: natscli's selection when none is named (a question
on stdin, system streams only with `-a`), and one line for a stream that does not exist."""

from __future__ import annotations

from ...errors import STREAM_NOT_FOUND, ApiError, CliError
from ...jsapi import JsonDict
from ...session import Session
from .._shared import choose, is_internal_stream


async def stream_exists(s: Session, name: str) -> JsonDict:
    try:
        return await s.js.stream_info(name)
    except ApiError as exc:
        if exc.err_code == STREAM_NOT_FOUND:
            raise CliError(f"stream {name!r} not found") from exc
        raise


async def pick_stream(s: Session, name: str | None, show_all: bool) -> str:
    if name:
        return name
    names = [n for n in await s.js.stream_names() if show_all or not is_internal_stream(n)]
    return choose("stream", None, names)
