"""The cursor of a consumer: which message it delivers next for the first time.

State, named as in nats-server:
- `sseq`: the next stream sequence to deliver for the first time;
  `dseq`: the last consumer (delivery) sequence used (redeliveries take one
  too); `last_sseq`: the stream sequence of the last first delivery.
  `delivered` in consumer info is `(dseq, last_sseq)`.
- `npc`: `num_pending`, the matching messages at or after `sseq`, kept
  incrementally (+1 on a stored match, by the consumer; -1 per first delivery;
  recounted on purge/reset/filter change; 0 when the store has nothing more)
  so that the ack subject's last token is exact without a store scan per
  message.
- `lps`: for deliver policy `last_per_subject`, the sequences still to
  deliver first (the last message of each matching subject at start).
- the filters: `filters` as configured, `store_filters` as the store uses
  them (None when they select every subject of the stream, so the store
  walks all messages without resolving subjects) and `match`, the subject
  predicate (None: everything matches).

The start policy (`start`), a restore from saved state, CONSUMER.RESET and
purges move the cursor; `next_new` reads the next message and `commit`
records its delivery. The cursor never sends anything and knows nothing of
acknowledgements (ack_tracker.py) or of how messages leave (pull.py, push.py).

Invariants: `sseq >= 1`; `last_sseq < sseq` unless a redelivery-only state
was restored; a cursor past the stream's end stays valid (new messages are
found from it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from jetstream_server.jetstream.consumer.config import ConsumerConfig
from jetstream_server.jetstream.seams import StreamForConsumers
from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.jetstream.subject_match import is_subset
from jetstream_server.store.base import StoredMessage


def make_matcher(filters: tuple[str, ...]) -> Callable[[str], bool] | None:
    """A subject predicate for `filters`, or None when everything matches."""
    if not filters or ">" in filters:
        return None
    literals = frozenset(f for f in filters if "*" not in f and ">" not in f)
    patterns = [tuple(f.split(".")) for f in filters if f not in literals]
    if not patterns:
        return literals.__contains__

    def match(subject: str) -> bool:
        if subject in literals:
            return True
        toks = subject.split(".")
        for pat in patterns:
            n = len(pat)
            if pat[-1] == ">":
                if len(toks) < n:
                    continue
                n -= 1
            elif len(toks) != n:
                continue
            if all(p == "*" or p == t for p, t in zip(pat[:n], toks, strict=False)):
                return True
        return False

    return match


class Cursor:
    """Where a consumer is in its stream (see module docstring)."""

    __slots__ = (
        "stream", "sseq", "dseq", "last_sseq", "npc", "lps", "filters", "store_filters",
        "match", "stream_config",
    )

    def __init__(self, stream: StreamForConsumers, filters: tuple[str, ...]) -> None:
        self.stream = stream
        self.sseq = 1
        self.dseq = 0
        self.last_sseq = 0
        self.npc = 0
        self.lps: deque[int] = deque()
        self.filters = filters
        self.store_filters: tuple[str, ...] | None = None
        self.match: Callable[[str], bool] | None = None
        self.stream_config: StreamConfig | None = None  # what the filters were resolved against
        self.refresh_filters()

    # -- filters ---------------------------------------------------------------
    def refresh_filters(self) -> None:
        """Resolve the filters against the stream's subjects. A filter set that
        covers every subject of the stream selects everything (ordered consumers
        and KV watchers filter on the stream's own subject). The consumer calls
        this again whenever the stream's config object changed."""
        stream_cfg = self.stream.config
        self.stream_config = stream_cfg
        filters = self.filters
        subjects = tuple(stream_cfg.subjects or ())
        if filters and subjects and all(any(is_subset(s, f) for f in filters) for s in subjects):
            filters = ()
        self.store_filters = filters or None
        self.match = make_matcher(filters)

    def set_filters(self, filters: tuple[str, ...]) -> None:
        """New filters from a config update; `num_pending` is recounted when they changed."""
        changed = filters != self.filters
        self.filters = filters
        self.refresh_filters()
        if changed:
            self.npc = self.count_pending(self.sseq)

    def count_pending(self, start_seq: int) -> int:
        return int(self.stream.store.num_pending(start_seq, self.store_filters))

    def recount(self) -> None:
        """Make `num_pending` exact again. The counter is kept incrementally, but
        the stream removes messages (limits, TTL, single deletes) without telling
        consumers; a recount per pull request and per info keeps it honest."""
        if not self.lps:
            self.npc = self.count_pending(self.sseq)

    # -- positioning -------------------------------------------------------------
    def start(self, config: ConsumerConfig) -> None:
        """Position by the deliver policy, as at consumer creation."""
        store = self.stream.store
        state = store.state()
        first, last = state.first_seq, state.last_seq
        policy = config.deliver_policy
        self.lps.clear()
        if policy == "all":
            self.sseq = max(first, 1)
        elif policy == "new":
            self.sseq = last + 1
        elif policy == "last":
            seqs = [
                m.seq for f in (self.filters or (None,)) if (m := store.load_last(f)) is not None
            ]
            self.sseq = max(seqs) if seqs else last + 1
        elif policy == "by_start_sequence":
            self.sseq = max(config.opt_start_seq, 1)
            if self.sseq < first:
                self.sseq = first
        elif policy == "by_start_time":
            self.sseq = max(int(store.seq_for_time(config.opt_start_time_ns or 0)), 1)
        elif policy == "last_per_subject":
            lasts: set[int] = set()
            for f in self.filters or (">",):
                for info in store.subjects(f).values():
                    lasts.add(info.last_seq)
            if lasts:
                self.lps.extend(sorted(lasts))
                self.sseq = self.lps[0]
            else:
                self.sseq = last + 1
        self.last_sseq = self.sseq - 1
        self.dseq = 0
        self.npc = len(self.lps) if self.lps else self.count_pending(self.sseq)

    def start_seq_for_policy(self, config: ConsumerConfig) -> int:
        """The first stream sequence the deliver policy selects now (for RESET checks)."""
        if config.deliver_policy == "by_start_sequence":
            return max(config.opt_start_seq, 1)
        if config.deliver_policy == "by_start_time":
            return max(int(self.stream.store.seq_for_time(config.opt_start_time_ns or 0)), 1)
        return 1

    def restore(self, delivered_consumer_seq: int, delivered_stream_seq: int) -> None:
        """Position after the saved `delivered` pair (never before the stream's first message)."""
        self.dseq = delivered_consumer_seq
        self.sseq = delivered_stream_seq + 1
        self.last_sseq = delivered_stream_seq
        first = self.stream.store.state().first_seq
        if self.sseq < first:
            self.sseq = first
        self.npc = self.count_pending(self.sseq)

    def reset(self, seq: int) -> None:
        """CONSUMER.RESET: deliver from `seq` on, consumer sequences from 1 again."""
        self.lps.clear()
        self.dseq = 0
        self.sseq = seq
        self.last_sseq = seq - 1
        self.npc = self.count_pending(seq)

    def on_purged(self, first_seq: int) -> None:
        """Messages below `first_seq` are gone: nothing before it is delivered."""
        if self.sseq < first_seq:
            self.sseq = first_seq
        if self.last_sseq < first_seq - 1:
            self.last_sseq = first_seq - 1
        while self.lps and self.lps[0] < first_seq:
            self.lps.popleft()
        self.npc = len(self.lps) if self.lps else self.count_pending(self.sseq)

    # -- delivery (hot path) -----------------------------------------------------
    def next_new(self, hint: StoredMessage | None = None) -> StoredMessage | None:
        """The next message to deliver for the first time, without moving the cursor.

        `hint` is a message just stored: when it is the next one, no store read."""
        lps = self.lps
        if lps:
            load = self.stream.store.load
            while lps:
                msg = load(lps[0])
                if msg is not None:
                    return msg
                lps.popleft()
                self.npc = max(self.npc - 1, 0)
            self.npc = self.count_pending(self.sseq)
        if hint is not None and hint.seq == self.sseq:
            return hint
        msg = self.stream.store.load_next(self.sseq, self.store_filters)
        if msg is None:
            self.npc = 0
            if self.store_filters is not None:
                # Nothing more matches: move the cursor past the stream's end (as
                # nats-server does); what lies between never matched.
                end = int(self.stream.store.state().last_seq) + 1
                if end > self.sseq:
                    self.sseq = end
        return msg

    def commit_run(self, last_seq: int, count: int) -> None:
        """Record the first deliveries of `count` messages up to stream sequence
        `last_seq` (a run read from `sseq`, while `lps` is empty): as `commit`
        of each in turn."""
        self.dseq += count
        if last_seq >= self.sseq:
            self.sseq = last_seq + 1
        if last_seq > self.last_sseq:
            self.last_sseq = last_seq
        self.npc = max(self.npc - count, 0)

    def commit(self, seq: int, dc: int) -> int:
        """Record a delivery of stream sequence `seq` (delivery count `dc`); returns
        its consumer sequence. A first delivery (`dc == 1`) moves the cursor."""
        self.dseq += 1
        if dc == 1:
            lps = self.lps
            if lps and lps[0] == seq:
                lps.popleft()
            if seq >= self.sseq:
                self.sseq = seq + 1
            if seq > self.last_sseq:
                self.last_sseq = seq
            if self.npc > 0:
                self.npc -= 1
        return self.dseq
