"""Reading a sink's pub acks in bulk: one pass of `bytes` methods over a receive buffer.

A sink task's connection receives almost only positive pub acks, each a MSG frame
``MSG <prefix><token> <sid> <size>`` + CRLF + ``{"stream":"S","seq":N}`` (with
``,"duplicate":true`` or ``,"duplicate": true`` for a `Nats-Msg-Id` already stored,
``,"domain":"D"`` after the seq in a JetStream domain) + CRLF. Parsing each into a frame
tuple and reading it in a Python loop costs more than the sink's hashing;
`scan_acks(buf, pos, prefix, sid)` reads every complete frame of `buf[pos:]` at once
(split at CRLF, the header lines split at spaces, each check a C-level pass over all
of them) and returns an `AckRun`: the tokens acked, which of them as duplicates, the
streams named, and where the run ends.

A payload is taken as a positive ack when it opens with ``{"stream":"S",``, closes
with ``}`` and holds no ``"error"`` (nor a backslash: a name the scan would have to
unescape); it is a duplicate when it says ``"duplicate": true``, as in the frame by
frame path. All or nothing: when any complete frame in the buffer is something else
(a status such as 503, an error or any other payload, a PING, INFO,
another subscription's message, a frame whose size disagrees with its payload, any
irregular spacing), `scan_acks` returns None and the caller parses the buffer frame by
frame (the full parse, which handles everything). A frame cut by the read is left for
the next call. Payloads hold no CR or LF (a JSON pub ack never does), so the frames
alternate header line, payload line; any that does not fails the checks.

Pure: bytes in, values out; no sockets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from spark_jetstream.client.frames import CRLF

__all__ = ["DUPLICATE_RE", "AckRun", "scan_acks"]

# a duplicate's pub ack, with or without a space after the colon (the publisher's frame
# by frame path reads it with the same pattern)
DUPLICATE_RE: Final = re.compile(rb'"duplicate"\s*:\s*true')
# how a pub ack opens (checked one by one only when the acks name different streams)
_OPENING_RE: Final = re.compile(rb'\{"stream":"([^"\\]*)",')


@dataclass(frozen=True, slots=True)
class AckRun:
    """Positive pub acks read from one buffer: `tokens` in order (the reply's last token),
    the tokens among them acked as duplicates, the stream names, and the end position."""

    tokens: list[int]
    duplicates: list[int]
    streams: set[bytes]
    end: int


def scan_acks(buf: bytes, pos: int, prefix: bytes, sid: bytes) -> AckRun | None:
    """Every complete frame of `buf[pos:]` as positive pub acks to `<prefix><token>` on
    subscription `sid`, or None when any is not one (or there is no complete frame)."""
    if b"\n" in prefix:
        return None
    lines = buf[pos:].split(CRLF)
    end = len(buf) - len(lines.pop())  # after the last CRLF: a frame still in flight, or b""
    if len(lines) % 2:
        end -= len(lines.pop()) + 2  # a header line whose payload has not fully arrived
    n = len(lines) // 2
    if not n:
        return None
    heads = lines[0::2]
    payloads = lines[1::2]
    # header lines: exactly `MSG <subject> <sid> <size>`, single spaces (four words a line,
    # or a word out of place fails the checks of the words in each place)
    words = b" ".join(heads).split(b" ")
    if len(words) != 4 * n or words[0::4] != [b"MSG"] * n or words[2::4] != [sid] * n:
        return None
    # sizes: each the payload's length, written as nats-server writes it (a few distinct ones)
    lengths = list(map(len, payloads))
    written = {length: b"%d" % length for length in set(lengths)}
    if words[3::4] != list(map(written.__getitem__, lengths)):
        return None
    # subjects: `<prefix><digits>` each (a subject holds no LF, so LF+prefix marks a start)
    tokens = (b"\n" + b"\n".join(words[1::4])).split(b"\n" + prefix)
    if len(tokens) != n + 1 or tokens[0]:
        return None
    del tokens[0]
    joined = b"".join(tokens)
    if not joined.isdigit():
        return None
    # payloads: `{"stream":"S",...}` without an error (the full parse reads anything else)
    text = b"\n".join(payloads)
    if b'"error"' in text or b"\\" in text or text.count(b"}\n") != n - 1 or not text.endswith(b"}"):
        return None
    first = _OPENING_RE.match(payloads[0])
    if first is None:
        return None
    head = first.group(0)
    if text.count(b"\n" + head) == n - 1:  # one stream, the usual case
        streams = {first.group(1)}
    else:
        openings = list(map(_OPENING_RE.match, payloads))
        if not all(openings):
            return None
        streams = {m.group(1) for m in openings if m is not None}
    ints = list(map(int, tokens))
    duplicates: list[int] = []
    if b"duplicate" in text:
        duplicates = [t for t, p in zip(ints, payloads, strict=True) if DUPLICATE_RE.search(p)]
    return AckRun(ints, duplicates, streams, end)
