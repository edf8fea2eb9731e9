"""The pull requests of a range read in flight, and when the next one goes out.

A range read (fetch.py) pulls with no_wait requests of `batch` messages each.
`PullRequests` keeps, oldest first (the server serves them in that order), how
many messages each asked for and may still bring: data frames count against the
oldest (`delivered`); a request that ends before its count (409 max bytes,
`ended`) or is refused (408 Requests Pending, `refused`) gives back what it did
not bring. `to_ask` says when the next request goes out and how big it is: while
the one in flight still has half a batch to bring, so the server always has a
request to serve, and never past the range's end.

Pure bookkeeping: no sockets.
"""

from __future__ import annotations

from collections import deque

__all__ = ["PullRequests"]


class PullRequests:
    """The no_wait pull requests in flight, oldest first (the server serves them in that order):
    how many messages each asked for and how many it may still bring."""

    def __init__(self) -> None:
        self._left: deque[list[int]] = deque()
        self.asked = 0  # messages asked for that came or may still come

    @property
    def count(self) -> int:
        return len(self._left)

    @property
    def outstanding(self) -> int:
        return sum(left for _, left in self._left)

    def sent(self, count: int) -> None:
        self._left.append([count, count])
        self.asked += count

    def delivered(self, count: int) -> None:
        left = self._left
        while count and left:
            taken = min(count, left[0][1])
            left[0][1] -= taken
            count -= taken
            if not left[0][1]:
                left.popleft()

    def ended(self) -> tuple[int, int]:
        """The oldest request ended before its count (max bytes): how many it asked for and
        brought ((0, 0): none was in flight)."""
        if not self._left:
            return 0, 0
        count, left = self._left.popleft()
        self.asked -= left  # still to ask for
        return count, count - left

    def to_ask(self, batch: int, more: int) -> int:
        """How many messages a request should ask for now (0: none yet), `more` being those
        of the range not asked for yet (an estimate with filters; when it runs out before the
        range is read, whole batches follow). The next request goes out while the one in flight
        still has half a batch to bring, so that the server never waits for the client's next
        request; never more than two are in flight, and an early one asks for no more than
        `more`: a range read's consumer delivers nothing past the range."""
        if not self._left:
            return min(batch, more) if more > 0 else batch
        if len(self._left) == 1 and more > 0 and self.outstanding <= batch // 2:
            return min(batch, more)
        return 0

    def refused(self) -> int:
        """The newest request was refused (408 Requests Pending): how many it asked for."""
        count = self._left.pop()[0] if self._left else 0
        self.asked -= count
        return count
