"""Stream metadata on disk, laid out like nats-server.

    <store_dir>/jetstream/<account>/streams/<name>/meta.json   config + created time
    (<account> is $G, nats-server's global account, unless accounts are configured)
    <store_dir>/jetstream/$G/streams/<name>/msgs/       message blocks (the file store's;
    <store_dir>/jetstream/$G/streams/<name>/LOCK, index.snap   it owns these too)
    <store_dir>/jetstream/$G/streams/<name>/obs/        consumer state (consumers)

Invariants: `meta.json` is replaced atomically (write a temp file, rename over
the old one), so after a crash it is either the old or the new version, never
a torn one; a failed write leaves no temp file behind. What is written here is
in the OS's hands before the call returns, so a process kill loses nothing. For
power cuts: `write_json_atomic` and `make_dirs` fsync (the file, then each
directory into its parent); a stream create, as nats-server's, does not fsync
by itself and returns the fsyncs instead (`create_stream_dir`), which the
engine runs on its disk thread before answering when `sync_always` is on. A
directory without a readable `meta.json` is not a stream: it is reported and
skipped, never deleted, and a create of the same name is refused (engine).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jetstream_server.store.file import MSGS_DIR

logger = logging.getLogger(__name__)

ACCOUNT = "$G"
META_FILE = "meta.json"


@dataclass(frozen=True, slots=True)
class StreamMeta:
    config: dict[str, Any]
    created_ns: int


def streams_root(store_dir: str | os.PathLike[str], account: str = ACCOUNT) -> Path:
    return Path(store_dir) / "jetstream" / account / "streams"


def stream_dir(store_dir: str | os.PathLike[str], name: str, account: str = ACCOUNT) -> Path:
    return streams_root(store_dir, account) / name


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on directories; the rename still happened
    finally:
        os.close(fd)


def missing_dirs(path: Path) -> list[Path]:
    """The directories `mkdir -p path` would create, deepest first."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    return missing


def make_dirs(path: Path) -> None:
    """`mkdir -p` that fsyncs each directory it creates into its parent."""
    missing = missing_dirs(path)
    path.mkdir(parents=True, exist_ok=True)
    for created in reversed(missing):
        fsync_dir(created.parent)
    if missing:
        fsync_dir(path)


def write_json_atomic(path: Path, body: dict[str, Any], *, sync: bool = True) -> None:
    """Replace `path` with `body` as JSON: tmp + rename, never a torn file.

    With `sync` (the default) the temp file and the directory are fsynced, so
    the new version also survives a power cut; without it, a process kill. On
    failure (disk full) the temp file is removed and the old version stays."""
    make_dirs(path.parent)
    data = json.dumps(body, separators=(",", ":")).encode()
    write_bytes_atomic(path, data, sync=sync)


def write_bytes_atomic(path: Path, data: bytes, *, sync: bool = True) -> None:
    """`write_json_atomic` for bytes already encoded (the directory must exist)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync:
        fsync_dir(path.parent)


def create_stream_dir(directory: Path, meta: StreamMeta) -> list[Path]:
    """A new stream's directory with its meta.json and the file store's `msgs`
    directory (so the store makes none of its own), written as nats-server
    writes them: handed to the OS, not fsynced, which no process kill can undo.
    Returns the fsyncs (the meta file, then directories deepest first) that make
    the create survive a power cut as well: the engine runs them on the disk
    thread with `sync_always`. Nothing is left behind on failure. The directory
    must not exist (the engine never creates over existing data)."""
    created = missing_dirs(directory.parent)
    directory.parent.mkdir(parents=True, exist_ok=True)
    directory.mkdir()
    try:
        (directory / MSGS_DIR).mkdir()
        write_meta(directory, meta, sync=False)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    dirs = [directory, directory.parent, *(p.parent for p in created)]
    return [directory / META_FILE, *dirs]


def fsync_paths(paths: list[Path]) -> None:
    """fsync each file or directory in order (any thread); the first failure raises."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_meta(directory: Path, meta: StreamMeta, *, sync: bool = True) -> None:
    """Replace a stream's meta.json (atomically; fsynced with `sync`)."""
    write_json_atomic(
        directory / META_FILE, {"config": meta.config, "created_ns": meta.created_ns}, sync=sync
    )


def read_meta(directory: Path) -> StreamMeta:
    """Read one stream's meta (OSError / ValueError when missing or damaged)."""
    raw = json.loads((directory / META_FILE).read_bytes())
    if not isinstance(raw, dict) or not isinstance(raw.get("config"), dict):
        raise ValueError(f"{META_FILE} is not a stream meta object")
    return StreamMeta(config=raw["config"], created_ns=int(raw.get("created_ns", 0)))


def list_stream_dirs(store_dir: str | os.PathLike[str], account: str = ACCOUNT) -> list[Path]:
    root = streams_root(store_dir, account)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def remove_stream_dir(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    fsync_dir(directory.parent)
