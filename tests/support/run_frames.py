"""Reading back what an `OutboundRun` (core/router.py) writes, for doubles of the router.

`decoded(run)` encodes the run as the broker hands it to one client
(`run.encode`), parses the ``MSG``/``HMSG`` frames back and checks them
against the run's `messages()` (the form routed one by one): both forms of a
run must say the same, so every test that delivers through a double checks
the frames a client would get.
"""

from __future__ import annotations

from jetstream_server.core.router import OutboundRun

SID = b"7"

# (subject, reply, headers, payload)
Message = tuple[str, "str | None", "bytes | None", bytes]


def parse_frames(data: bytes, *, sid: bytes = SID) -> list[Message]:
    """The messages of a buffer of ``MSG``/``HMSG`` frames to subscription `sid`."""
    out: list[Message] = []
    pos = 0
    while pos < len(data):
        eol = data.index(b"\r\n", pos)
        op, *args = data[pos:eol].split(b" ")
        pos = eol + 2
        if op == b"MSG":
            subject, got_sid, *reply_args = args[:-1]
            hlen, total = 0, int(args[-1])
        elif op == b"HMSG":
            subject, got_sid, *reply_args = args[:-2]
            hlen, total = int(args[-2]), int(args[-1])
        else:
            raise AssertionError(f"not a message frame: {data[pos - 2 - len(data[:eol]):eol]!r}")
        assert got_sid == sid, (got_sid, sid)
        assert len(reply_args) <= 1, args
        body = data[pos : pos + total]
        assert data[pos + total : pos + total + 2] == b"\r\n"
        pos += total + 2
        reply = reply_args[0].decode() if reply_args else None
        out.append((subject.decode(), reply, body[:hlen] if hlen else None, body[hlen:]))
    return out


def decoded(run: OutboundRun, *, headers: bool = True) -> list[Message]:
    """The messages of `run` as a client taking `headers` reads them (checked
    against `run.messages()`, and the carried byte count against them)."""
    data, carried = run.encode(SID, headers)
    got = parse_frames(data)
    expected = [
        (subject, reply, hdr if headers else None, payload)
        for subject, reply, hdr, payload in run.messages()
    ]
    assert got == expected, (got, expected)
    assert carried == sum(len(h or b"") + len(p) for _, _, h, p in got)
    assert len(run) == len(got)
    return got
