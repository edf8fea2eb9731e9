"""Block files of the file store: naming, listing, and the in-memory `Block`.

A block is `msgs/<number:010d>.blk` (format in `codec`). Numbers only grow, so
sorting by number is sorting by age, and the blocks' `first_seq` values are
non-decreasing in that order: a sequence lives in the last block whose
`first_seq` is not above it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_BLOCK_NAME = re.compile(r"^(\d{10})\.blk$")


class Block:
    """What the file store keeps in memory about one block file."""

    __slots__ = ("number", "path", "first_seq", "stamp", "size", "rfd", "live_bytes")

    def __init__(self, number: int, path: Path, first_seq: int, stamp: int, size: int) -> None:
        self.number = number
        self.path = path
        self.first_seq = first_seq
        self.stamp = stamp  # header stamp: tombstones stamped below it are obsolete here
        self.size = size  # bytes in the file (valid records only)
        self.rfd = -1  # read descriptor, opened on demand
        self.live_bytes = 0  # sum of the accounted sizes of present messages in this block


def block_path(msgs_dir: Path, number: int) -> Path:
    return msgs_dir / f"{number:010d}.blk"


def block_files(msgs_dir: Path) -> list[tuple[int, Path]]:
    """(number, path) of every block file, oldest first."""
    found = []
    for entry in os.scandir(msgs_dir):
        match = _BLOCK_NAME.match(entry.name)
        if match and entry.is_file():
            found.append((int(match.group(1)), Path(entry.path)))
    return sorted(found)
