"""The optional speed-ups (`pip install 'jetstream-server[speedups]'`): the event loop, the JSON
encoder and the store's CRC-32.

The `speedups` extra installs three compiled packages: uvloop, an asyncio event loop on libuv
written in Cython (the loop's turn, socket reads and transport writes cost a fraction of
asyncio's pure-Python ones), orjson, which writes a durable consumer's state
(`core.compact_json`), and python-isal, whose CRC-32 (ISA-L's, the same numbers as zlib's)
checks and seals the file store's records (`store.codec`). docs/server-speedups.md has the
figures. Nothing else changes: the server speaks the same protocol, writes the same bytes and
keeps the same guarantees either way.

`choose(mode)` decides, `run(main, choice)` switches the JSON encoder and the CRC-32 and runs a
coroutine on the chosen loop (the contract of `asyncio.run`), `choice.describe()` is the log
line that says what is in use. Modes:

- ``auto`` (the default): each package when it imports, the standard library otherwise;
- ``off``: asyncio's own loop and the standard library's json and zlib, whatever is installed;
- ``on``: all three, or `SpeedupsUnavailable` naming the missing package.

One configuration keeps asyncio's loop whatever the mode: TLS ``handshake_first`` with a
fallback delay (``auto``, ``"300ms"``) holds a new connection's first bytes unread while it waits
(paused in `connection_made`), which uvloop does not honour (it starts reading right after
`connection_made`): `choose(mode, hold_first_bytes=True)` says so in the log line.

The mode comes from the caller (the ``--speedups`` flag, `EmbeddedServer(speedups=...)`), else
from the `JETSTREAM_SPEEDUPS` environment variable, else ``auto``; a value that is none of the
three is an error naming them.

Invariant: without the extra installed (or with ``off``) the server runs on asyncio's own
loop with the standard library's json and zlib, exactly as it did before this module existed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from importlib import import_module, metadata
from typing import Any, Final, TypeVar

from jetstream_server.config import ServerConfig
from jetstream_server.core import compact_json
from jetstream_server.core.compact_json import (
    SPEEDUPS_ENV as SPEEDUPS_ENV,  # re-exported for its users
)
from jetstream_server.store import codec

MODES: Final = ("auto", "on", "off")
UVLOOP: Final = "uvloop"
ORJSON: Final = "orjson"
ISAL: Final = "isal"  # python-isal's distribution and import name

T = TypeVar("T")


class SpeedupsUnavailable(ValueError):
    """A mode that cannot be honoured: unknown, or ``on`` without the extra installed."""


@dataclass(frozen=True, slots=True)
class LoopChoice:
    """The event loop the server runs on (`runner`, `asyncio.run`'s contract; None: asyncio's
    own), the JSON encoder of its state files (`json_name`: "json" is the standard library) and
    the CRC-32 of its file store (`crc_name`: "zlib" is the standard library)."""

    mode: str
    loop_name: str
    runner: Callable[[Coroutine[Any, Any, Any]], Any] | None
    json_name: str = "json"
    note: str = ""  # why the loop is asyncio's although uvloop is installed
    crc_name: str = "zlib"

    @property
    def uses_uvloop(self) -> bool:
        return self.runner is not None

    @property
    def uses_orjson(self) -> bool:
        return self.json_name != "json"

    @property
    def uses_isal(self) -> bool:
        return self.crc_name != "zlib"

    def describe(self) -> str:
        used = f"event loop {self.loop_name}, JSON {self.json_name}, CRC-32 {self.crc_name}"
        uses = ((UVLOOP, self.uses_uvloop), (ORJSON, self.uses_orjson), (ISAL, self.uses_isal))
        if any(on for _, on in uses):
            missing = [name for name, on in uses if not on]
            hint = self.note or (f"{' and '.join(missing)} not installed" if missing else "")
            return f"Speedups: {used} (turn off with {SPEEDUPS_ENV}=off or --speedups off{'; ' + hint if hint else ''})"
        why = "turned off" if self.mode == "off" else "not installed: pip install 'jetstream-server[speedups]'"
        return f"Speedups: none, {used} ({why})"


def compiled() -> bool:
    """Whether the installed hot modules are the compiled build's (server/setup.py: mypyc), not
    the pure-Python sources (the same code either way)."""
    from jetstream_server.core import session

    return not (getattr(session, "__file__", None) or "").endswith(".py")


def build_line() -> str:
    """The log line that says which build runs."""
    if compiled():
        return "Build: hot modules compiled (mypyc)"
    return "Build: pure Python (not compiled; docs/server-speedups.md)"


def requested_mode(mode: str | None = None) -> str:
    """`mode` when given, else `JETSTREAM_SPEEDUPS`, else ``auto``; checked against `MODES`."""
    raw = mode if mode is not None else os.environ.get(SPEEDUPS_ENV, "")
    value = raw.strip().lower() or "auto"
    if value not in MODES:
        source = "speedups" if mode is not None else SPEEDUPS_ENV
        raise SpeedupsUnavailable(f"{source}: {raw!r} is not one of {', '.join(MODES)}")
    return value


HOLD_FIRST_BYTES_NOTE: Final = "uvloop not used: tls handshake_first with a fallback delay"


def choose(mode: str | None = None, *, hold_first_bytes: bool = False) -> LoopChoice:
    """The loop for `mode` (see the module docstring; `hold_first_bytes`: the server's config has
    TLS handshake_first with a fallback delay); raises `SpeedupsUnavailable`."""
    value = requested_mode(mode)
    if value == "off":
        return LoopChoice(value, "asyncio", None)
    loaded = {name: _import(name, required=value == "on") for name in (UVLOOP, ORJSON, ISAL)}
    uvloop = loaded[UVLOOP]
    json_name = f"orjson {_version(ORJSON)}" if loaded[ORJSON] is not None else "json"
    crc_name = f"isal {_version(ISAL)}" if loaded[ISAL] is not None and codec.isal_available() else "zlib"
    if uvloop is None:
        return LoopChoice(value, "asyncio", None, json_name, crc_name=crc_name)
    if hold_first_bytes:
        return LoopChoice(value, "asyncio", None, json_name, HOLD_FIRST_BYTES_NOTE, crc_name)
    # uvloop.run: asyncio.run on a new uvloop loop (asyncio.Runner with its factory on 3.11+)
    return LoopChoice(value, f"uvloop {_version(UVLOOP)}", uvloop.run, json_name, crc_name=crc_name)


def holds_first_bytes(config: ServerConfig) -> bool:
    """Whether `config` makes connections wait unread for their first bytes (see `choose`)."""
    return config.tls.enabled and config.tls.handshake_first and config.tls.handshake_first_fallback_s > 0


def run(main: Coroutine[Any, Any, T], choice: LoopChoice) -> T:
    """Run `main` to its end on a new loop of `choice` (as `asyncio.run` does, in any thread),
    with the JSON encoder and the CRC-32 of `choice` (process-wide)."""
    compact_json.use_orjson(choice.uses_orjson)
    codec.use_isal(choice.uses_isal)
    runner = choice.runner
    if runner is None:
        return asyncio.run(main)
    result: T = runner(main)
    return result


def _import(name: str, *, required: bool) -> Any:
    """The module `name`, None when it does not import; `required`: raise instead."""
    try:
        return import_module(name)
    except ImportError as exc:
        if required:
            raise SpeedupsUnavailable(
                f"speedups on, but {name} does not import ({exc}): pip install 'jetstream-server[speedups]'"
            ) from exc
        return None


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "(version unknown)"
