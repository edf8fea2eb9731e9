"""Finding the stream and consumer a command names: natscli's selection when none is named
(questions on stdin), and one line for a stream or consumer that does not exist."""

from __future__ import annotations

from ...errors import CONSUMER_NOT_FOUND, STREAM_NOT_FOUND, ApiError, CliError
from ...jsapi import JsonDict
from ...session import Session
from .._shared import choose
from ..stream.lookup import pick_stream, stream_exists


async def consumer_exists(s: Session, stream: str, name: str) -> JsonDict:
    try:
        return await s.js.consumer_info(stream, name)
    except ApiError as exc:
        if exc.err_code == STREAM_NOT_FOUND:
            raise CliError(f"stream {stream!r} not found") from exc
        if exc.err_code == CONSUMER_NOT_FOUND:
            raise CliError(f"consumer {name!r} not found on stream {stream!r}") from exc
        raise


async def pick(s: Session, stream: str | None, consumer: str | None, show_all: bool,
               want_consumer: bool = True) -> tuple[str, str]:
    """(stream, consumer) as named, or chosen on stdin; the stream must exist."""
    stream = await pick_stream(s, stream, show_all)
    await stream_exists(s, stream)
    if want_consumer and not consumer:
        consumer = choose("consumer", None, await s.js.consumer_names(stream))
    return stream, consumer or ""
