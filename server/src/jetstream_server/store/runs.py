"""`MessageRun`: consecutive stored messages read in one pass (`StreamStore.read_run`).

A run is what a delivery of N messages needs from storage: the present
messages from a start sequence on (matching a filter, within an end sequence,
a count and a byte limit), in order, each verified, without one store call
per message. The file store reads each stretch of a block holding the run's
records with one `pread`, checks every record's checksum in that pass, and
keeps the bytes: a `BufferRun` hands out subject, headers and payload of each
message as slices of those buffers (memoryviews with `parts`, no copy).
The memory store's runs (`ListRun`) hold its `StoredMessage`s.

What a run says beyond its messages:
- `next_seq`: where the following read starts. Past every sequence this read
  looked at: the last message's + 1 when a limit ended it, `end_seq + 1` (or
  `last_seq + 1`) when nothing more matched, and the sequence of the message
  that stopped it otherwise (a damaged record, a message over the byte limit).
- `blocked_size`: the stored size of the message the byte limit kept out
  (0: none did), so a pull can answer "message size exceeds max bytes".
- `sizes`/`nbytes`: each message's stored size (`StreamStore.msg_size`) and
  their sum, the measure of `max_bytes`.

Invariants: `len(seqs) == len(sizes) == len(run)`; sequences strictly
increase; a run never holds a removed message or one its filter does not
match; slicing (`run[a:b]`) gives a run of the same kind over the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, overload

from jetstream_server.store.message import StoredMessage

# A body (header block and data) up to this size is copied out of its buffer for a delivery,
# a larger one is a view of it (see `BufferRun.columns`).
COPY_BODY: Final = 16 * 1024

# subjects, sequences, timestamps, header lengths, bodies (see `MessageRun.columns`). The
# numbers are `Any`: compiled, an `int` element is unboxed and boxed again (a new object above
# 256) where it is used; as `Any` the stored object passes through, as it does interpreted.
RunColumns = tuple[list[str], list[Any], list[Any], list[Any], list["bytes | memoryview"]]


class MessageRun:
    """Messages of one `read_run`, in order (see module docstring): a sequence of
    `StoredMessage`s (length, index, slice, iteration). Not a `collections.abc.Sequence`
    subclass: the compiled build makes it a native class, which cannot derive from an ABC."""

    __slots__ = ("seqs", "sizes", "next_seq", "blocked_size")

    def __init__(self, seqs: list[int], sizes: list[int], next_seq: int, blocked_size: int = 0) -> None:
        self.seqs = seqs
        self.sizes = sizes
        self.next_seq = next_seq
        self.blocked_size = blocked_size

    @property
    def nbytes(self) -> int:
        return sum(self.sizes)

    def __len__(self) -> int:
        return len(self.seqs)

    @overload
    def __getitem__(self, i: int) -> StoredMessage: ...

    @overload
    def __getitem__(self, i: slice) -> MessageRun: ...

    def __getitem__(self, i: int | slice) -> StoredMessage | MessageRun:
        if isinstance(i, slice):
            return self._slice(*i.indices(len(self.seqs))[:2])
        return self.message(i if i >= 0 else i + len(self.seqs))

    def __iter__(self) -> Iterator[StoredMessage]:
        for i in range(len(self.seqs)):
            yield self.message(i)

    def message(self, i: int) -> StoredMessage:
        raise NotImplementedError

    def parts(
        self, i: int
    ) -> tuple[str, int, int, bytes | memoryview | None, bytes | memoryview]:
        """(subject, seq, timestamp_ns, headers, data) of message `i`, the
        byte parts as views of the run's buffers where it has them."""
        msg = self.message(i)
        return msg.subject, msg.seq, msg.timestamp_ns, msg.headers, msg.data

    def columns(self) -> RunColumns:
        """What frames a delivery, column by column: subjects, sequences,
        timestamps, header lengths (0: none) and bodies, each message's header
        block and data as one buffer (a view of the run's bytes where it has
        them; the data starts at its header length)."""
        msgs = list(self)
        bodies: list[bytes | memoryview] = [
            m.headers + m.data if m.headers else m.data for m in msgs
        ]
        return (
            [m.subject for m in msgs],
            self.seqs,
            [m.timestamp_ns for m in msgs],
            [len(m.headers) if m.headers else 0 for m in msgs],
            bodies,
        )

    def _slice(self, lo: int, hi: int) -> MessageRun:
        raise NotImplementedError

    def _sliced_next(self, hi: int) -> int:
        """`next_seq` of the slice ending before message `hi`."""
        return self.next_seq if hi >= len(self.seqs) else self.seqs[hi]

    def __repr__(self) -> str:
        first = self.seqs[0] if self.seqs else None
        return f"<{type(self).__name__} {len(self.seqs)} msgs from {first}, next {self.next_seq}>"


class ListRun(MessageRun):
    """A run over messages already in memory."""

    __slots__ = ("msgs",)

    def __init__(
        self, msgs: list[StoredMessage], sizes: list[int], next_seq: int, blocked_size: int = 0
    ) -> None:
        super().__init__([m.seq for m in msgs], sizes, next_seq, blocked_size)
        self.msgs = msgs

    def message(self, i: int) -> StoredMessage:
        return self.msgs[i]

    def _slice(self, lo: int, hi: int) -> MessageRun:
        return ListRun(self.msgs[lo:hi], self.sizes[lo:hi], self._sliced_next(hi), self.blocked_size)


class BufferRun(MessageRun):
    """A run whose messages are slices of a few buffers read from disk.

    Per message: its buffer (`buf_of`), where its header block starts in it
    (`hdr_at`; the data follows it) and the lengths of both (`hdr_len` 0: no
    headers). The columns are the lists the store's read built, not arrays: a
    run lives for one delivery, and a list hands out the objects it holds where
    an array makes a new one at every read."""

    __slots__ = ("ts", "subjects", "bufs", "buf_of", "hdr_at", "hdr_len", "data_len")

    def __init__(self, next_seq: int = 0) -> None:
        super().__init__([], [], next_seq)
        self.ts: list[int] = []
        self.subjects: list[str] = []
        self.bufs: list[bytes] = []
        self.buf_of: list[int] = []
        self.hdr_at: list[int] = []
        self.hdr_len: list[int] = []
        self.data_len: list[int] = []

    @classmethod
    def build(
        cls,
        next_seq: int,
        bufs: list[bytes],
        seqs: list[Any],
        ts: list[Any],
        subjects: list[str],
        sizes: list[Any],
        buf_of: list[Any],
        hdr_at: list[Any],
        hdr_len: list[Any],
        data_len: list[Any],
    ) -> BufferRun:
        """A run over per-message lists, which it keeps (the data of message i
        starts right after its header block)."""
        run = cls(next_seq)
        run.bufs = bufs
        run.seqs = seqs
        run.ts = ts
        run.subjects = subjects
        run.sizes = sizes
        run.buf_of = buf_of
        run.hdr_at = hdr_at
        run.hdr_len = hdr_len
        run.data_len = data_len
        return run

    def message(self, i: int) -> StoredMessage:
        buf = self.bufs[self.buf_of[i]]
        hlen = self.hdr_len[i]
        at = self.hdr_at[i]
        data_at = at + hlen
        return StoredMessage(
            self.subjects[i],
            self.seqs[i],
            self.ts[i],
            buf[at : at + hlen] if hlen else None,
            buf[data_at : data_at + self.data_len[i]],
        )

    def parts(
        self, i: int
    ) -> tuple[str, int, int, bytes | memoryview | None, bytes | memoryview]:
        view = memoryview(self.bufs[self.buf_of[i]])
        hlen = self.hdr_len[i]
        at = self.hdr_at[i]
        data_at = at + hlen
        return (
            self.subjects[i],
            self.seqs[i],
            self.ts[i],
            view[at : at + hlen] if hlen else None,
            view[data_at : data_at + self.data_len[i]],
        )

    def columns(self) -> RunColumns:
        """The bodies are copies (`bytes`) up to `COPY_BODY` bytes, views above: a small
        copy costs less than a view, which the garbage collector tracks, and formats
        faster."""
        bufs = self.bufs
        bodies: list[bytes | memoryview] = []
        append = bodies.append
        views: dict[int, memoryview] = {}
        for b, at, hlen, dlen in zip(self.buf_of, self.hdr_at, self.hdr_len, self.data_len, strict=True):
            end = at + hlen + dlen
            if end - at <= COPY_BODY:
                append(bufs[b][at:end])
            else:
                view = views.get(b)
                if view is None:
                    view = views[b] = memoryview(bufs[b])
                append(view[at:end])
        return self.subjects, self.seqs, self.ts, self.hdr_len, bodies

    def _slice(self, lo: int, hi: int) -> MessageRun:
        out = BufferRun(self._sliced_next(hi))
        out.blocked_size = self.blocked_size
        out.bufs = self.bufs
        out.seqs = self.seqs[lo:hi]
        out.sizes = self.sizes[lo:hi]
        out.ts = self.ts[lo:hi]
        out.buf_of = self.buf_of[lo:hi]
        out.hdr_at = self.hdr_at[lo:hi]
        out.hdr_len = self.hdr_len[lo:hi]
        out.data_len = self.data_len[lo:hi]
        out.subjects = self.subjects[lo:hi]
        return out
