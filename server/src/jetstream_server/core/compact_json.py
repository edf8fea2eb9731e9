"""Compact JSON bytes for the server's own state files, by orjson when the `speedups` extra is installed.

`dumps(body)` is ``json.dumps(body, separators=(",", ":")).encode()``: the same bytes for what
the callers give it (dicts with ASCII keys, lists and integers: a durable consumer's state and its
log lines, written once per loop turn with acks in flight), from orjson's compiled encoder when
it is in use and from the standard library otherwise. An integer beyond 64 bits, which orjson
refuses, is written by the standard library.

`use_orjson(True/False)` switches it; the entry points call it through
`jetstream_server.app.speedups` (``--speedups``, `JETSTREAM_SPEEDUPS`). Until then it follows
`JETSTREAM_SPEEDUPS` itself: orjson when it imports, unless the variable says ``off``. One
switch per process (the module is shared by every server of the process).

Invariant: both encoders write text that `json.loads` reads back to the same value; nothing
reads these bytes but this server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from importlib import import_module
from typing import Any, Final

# the variable that turns the speedups on or off (read here, below `app`, and by app/speedups.py)
SPEEDUPS_ENV: Final = "JETSTREAM_SPEEDUPS"
_stdlib_separators = (",", ":")


def _stdlib_dumps(body: Any) -> bytes:
    return json.dumps(body, separators=_stdlib_separators).encode()


def _load_orjson() -> Callable[[Any], bytes] | None:
    try:
        orjson = import_module("orjson")
    except ImportError:
        return None
    encode: Callable[[Any], bytes] = orjson.dumps
    refused: type[Exception] = orjson.JSONEncodeError

    def dumps(body: Any) -> bytes:
        try:
            return encode(body)
        except refused:  # an integer beyond 64 bits
            return _stdlib_dumps(body)

    return dumps


_orjson_dumps = _load_orjson()
dumps: Callable[[Any], bytes] = _stdlib_dumps


def available() -> bool:
    """Whether orjson imports here."""
    return _orjson_dumps is not None


def use_orjson(enabled: bool) -> bool:
    """Encode with orjson (when it imports) or the standard library; True when orjson is in use."""
    global dumps
    dumps = _orjson_dumps if enabled and _orjson_dumps is not None else _stdlib_dumps
    return dumps is not _stdlib_dumps


def in_use() -> bool:
    return dumps is not _stdlib_dumps


use_orjson(os.environ.get(SPEEDUPS_ENV, "").strip().lower() != "off")
