"""The store's durable file operations: fsync a directory, and replace a file
with new bytes (temp file, fsync, rename; an interrupted write leaves no temp
file and the old file intact)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make the entries of directory `path` (renames, unlinks, creations) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, parts: Iterable[bytes | memoryview]) -> None:
    """Replace `path` with `parts`, written in order and fsynced before the
    rename. The directory is not fsynced (the caller decides when)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for part in parts:
                view = memoryview(part)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
