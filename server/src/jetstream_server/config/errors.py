"""`ConfigError`: what every part of the configuration raises.

A message names the key (``max_payload: expected a size ...``); an error
found in a file also carries the line of the entry (`line`), which the
loader puts in front of the message with the file name
(``server.conf:4: ...``). `with_line` (and `at_line`, around the handling of
one key) keeps the innermost line: the line of a key inside a block wins over
the line of the block.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class ConfigError(ValueError):
    """A bad configuration; the message names the key (and line, for files)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def with_line(line: int | None, exc: ConfigError) -> ConfigError:
    """`exc` with `line` unless it already names a (more precise) line."""
    return exc if exc.line is not None else ConfigError(str(exc), line)


@contextmanager
def at_line(line: int | None) -> Iterator[None]:
    """A `ConfigError` raised inside names `line` (unless it names its own)."""
    try:
        yield
    except ConfigError as exc:
        raise with_line(line, exc) from None
