"""An API answer holding one large mapping, encoded over loop turns.

A stream info's `subjects` may list up to 100,000 subjects (nats-server's
page, `SUBJECTS_INFO_LIMIT`): encoding that as JSON is tens of milliseconds,
too long for one turn of a loop every client shares. A handler answers with a
`SplicedAnswer` instead of a body: made from the mapping's keys in the order
of the answer and the look-up of their values, it gives a placeholder that
the handler puts where the mapping goes in the body it then hands over. The
dispatcher starts it; each turn encodes at most `ENTRIES_PER_TURN` entries
(the clock runs the next turn at once, after whatever else is waiting), and
the last turn splices the pieces into the encoded body, publishes it to the
reply subject and hands the text to `sent` (the API audit).

Invariants: the published bytes are exactly ``json.dumps(body with the
mapping in place, separators=(",", ":"))``; no turn encodes more than
`ENTRIES_PER_TURN` entries; the values are those of the snapshot the handler
passes, so the answer describes the stream at the request, however it
changes meanwhile.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Final

from jetstream_server.jetstream.api.host import ApiHost

ENTRIES_PER_TURN: Final = 8192  # mapping entries encoded per loop turn (a few ms)

_COMPACT: Final = (",", ":")


def encode(body: dict[str, Any]) -> str:
    """An answer's JSON text, as every API answer is encoded (compact)."""
    return json.dumps(body, separators=_COMPACT)


class SplicedAnswer:
    """An answer whose `body` holds `placeholder` where a mapping goes; `keys` (in
    order) and `value_of` give the mapping, encoded `ENTRIES_PER_TURN` a turn.
    The handler makes it first, puts `placeholder` in its body, then sets `body`."""

    def __init__(self, keys: Sequence[str], value_of: Callable[[str], Any]) -> None:
        self.placeholder = f"\x00spliced-{uuid.uuid4().hex}"
        self.body: dict[str, Any] = {}
        self.keys = keys
        self.value_of = value_of
        self._pieces: list[str] = []
        self._next = 0
        self.turn_sizes: list[int] = []  # entries encoded per turn (tests read it)

    def start(self, host: ApiHost, reply: str | None, sent: Callable[[str], None]) -> None:
        """Encode over the next turns, then publish to `reply` and call `sent(text)`."""
        self._host = host
        self._reply = reply
        self._sent = sent
        host.clock.call_later(0, self._turn)

    def _turn(self) -> None:
        start = self._next
        end = min(start + ENTRIES_PER_TURN, len(self.keys))
        value_of = self.value_of
        chunk = {key: value_of(key) for key in self.keys[start:end]}
        if chunk:
            self._pieces.append(encode(chunk)[1:-1])
        self.turn_sizes.append(end - start)
        self._next = end
        if end < len(self.keys):
            self._host.clock.call_later(0, self._turn)
            return
        head, found, tail = encode(self.body).partition(json.dumps(self.placeholder))
        assert found, "the placeholder is in the body"
        text = "".join((head, "{", ",".join(self._pieces), "}", tail))
        self._pieces = []
        if self._reply:
            self._host.router.publish(self._reply, None, None, text.encode())
        self._sent(text)
