"""The per-subject state of a stream: always in memory (nats-server's `psim`).

One `SubjectTable` per `MessageIndex`: every subject with present messages
has an id (a small int, recycled once the subject has none) and, in compact
arrays by id, its message count and first and last sequence. This is what
answers KV's last-by-subject, direct get `last_by`, `subjects_filter` stream
info and consumers' per-subject pending counts without looking at any page.
It costs one entry per live subject (about 100 bytes with its name), never
one per message.

Invariants: `s_msgs[sid]` is exact; for a live subject `s_first`/`s_last`
are its lowest/highest present sequence (the index keeps them so);
`resolve` returns exactly the live ids matching a filter; ids stay below
`MAX_SUBJECT_IDS`.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Sequence
from typing import Final

from jetstream_server.store.base import StoreError, SubjectInfo
from jetstream_server.store.filters import filter_selects, is_literal, normalize
from jetstream_server.store.subject_trie import SubjectTrie

MAX_SUBJECT_IDS: Final = (1 << 24) - 1
FEW_SUBJECTS: Final = 16
_FILTER_CACHE_MAX: Final = 16  # every new subject is matched against each cached filter


class SubjectTable:
    """Subject ids, names and per-subject counts/bounds of one stream."""

    def __init__(self) -> None:
        # the containers are never replaced (the index keeps references to them)
        self.sid_of: dict[str, int] = {}
        self.names: list[str] = []
        self.s_msgs = array("q")
        self.s_first = array("q")
        self.s_last = array("q")
        self.free: list[int] = []
        # wildcard filter tuple -> live subject ids matching it, kept up to date
        self._fcache: dict[tuple[str, ...], set[int]] = {}
        self._trie: SubjectTrie | None = None  # built by the first wildcard look-up

    def clear(self) -> None:
        """No subject at all (in place)."""
        self.sid_of.clear()
        del self.names[:]
        del self.s_msgs[:]
        del self.s_first[:]
        del self.s_last[:]
        del self.free[:]
        self._fcache.clear()
        self._trie = None

    def __len__(self) -> int:
        return len(self.sid_of)

    def intern(self, subject: str) -> int:
        sid = self.sid_of.get(subject)
        if sid is not None:
            return sid
        if self.free:
            sid = self.free.pop()
            self.names[sid] = subject
        else:
            sid = len(self.names)
            if sid >= MAX_SUBJECT_IDS:
                raise StoreError(
                    f"too many distinct subjects in one stream (limit {MAX_SUBJECT_IDS})"
                )
            self.names.append(subject)
            self.s_msgs.append(0)
            self.s_first.append(0)
            self.s_last.append(0)
        self.sid_of[subject] = sid
        if self._trie is not None:
            self._trie.add(subject, sid)
        for key, members in self._fcache.items():
            if any(filter_selects(f, subject) for f in key):
                members.add(sid)
        return sid

    def release(self, sid: int) -> None:
        """The subject has no message any more: its id may be reused."""
        if self._trie is not None:
            self._trie.remove(self.names[sid])
        del self.sid_of[self.names[sid]]
        self.names[sid] = ""
        self.free.append(sid)
        for members in self._fcache.values():
            members.discard(sid)

    def resolve(self, filters: Sequence[str] | str | None) -> Collection[int] | None:
        """Live subject ids matching any filter; None means "every subject".

        A wildcard result is a cached set kept current as subjects come and go
        (callers only read it); more than a few ids always come as a set."""
        norm = normalize(filters)
        if norm is None:
            return None
        if all(is_literal(f) for f in norm):
            sid_of = self.sid_of
            found = {sid_of[f] for f in norm if f in sid_of}
            return found if len(found) > FEW_SUBJECTS else list(found)
        members = self._fcache.get(norm)
        if members is None:
            if len(self._fcache) >= _FILTER_CACHE_MAX:
                self._fcache.clear()
            trie = self._trie
            if trie is None:
                trie = self._trie = SubjectTrie()
                for name, sid in self.sid_of.items():
                    trie.add(name, sid)
            # a walk of the branches the filters can match, not of every subject
            members = set().union(*(trie.match(f) for f in norm))
            self._fcache[norm] = members
        if len(members) == len(self.sid_of):
            return None  # the filter covers every subject there is (a KV watch)
        return members

    def info(self, subject: str) -> SubjectInfo | None:
        sid = self.sid_of.get(subject)
        if sid is None:
            return None
        return SubjectInfo(self.s_msgs[sid], self.s_first[sid], self.s_last[sid])

    def infos(self, subject_filter: str | None) -> dict[str, SubjectInfo]:
        sids = self.resolve(subject_filter)
        if sids is None:
            sids = list(self.sid_of.values())
        out = {
            self.names[sid]: SubjectInfo(self.s_msgs[sid], self.s_first[sid], self.s_last[sid])
            for sid in sids
        }
        return dict(sorted(out.items(), key=lambda kv: kv[1].first_seq))

    def counts(self, subject_filter: str | None) -> dict[str, int]:
        """Messages per matching subject, unordered: no per-subject object, no sort."""
        sids = self.resolve(subject_filter)
        names, msgs = self.names, self.s_msgs
        return {names[sid]: msgs[sid] for sid in (self.sid_of.values() if sids is None else sids)}

    def count(self, subject_filter: str | None) -> int:
        sids = self.resolve(subject_filter)
        return len(self.sid_of) if sids is None else len(sids)

    def export(self) -> tuple[list[str], dict[str, array[int]]]:
        return self.names, {"s_msgs": self.s_msgs, "s_first": self.s_first, "s_last": self.s_last}

    def restore(self, names: list[str], arrays: dict[str, array[int]]) -> None:
        if not all(len(arrays[k]) == len(names) for k in ("s_msgs", "s_first", "s_last")):
            raise ValueError("snapshot subject arrays disagree with the subject names")
        self.clear()
        self.names.extend(names)
        self.s_msgs.extend(arrays["s_msgs"])
        self.s_first.extend(arrays["s_first"])
        self.s_last.extend(arrays["s_last"])
        self.sid_of.update((name, sid) for sid, name in enumerate(self.names) if name)
        self.free.extend(sid for sid, name in enumerate(self.names) if not name)
