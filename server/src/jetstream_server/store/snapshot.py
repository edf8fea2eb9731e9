"""The file store's index snapshot: one file written on clean close, read on open.

Layout:

    8 bytes  magic b"NJSSNAP\\x01"
    4 bytes  u32 LE length M of the JSON metadata
    M bytes  JSON: caller metadata plus "arrays": [[name, typecode, itemsize, count], ...]
             and "byteorder" (the arrays are raw native-order bytes)
    ...      each array's raw bytes, in the order listed
    4 bytes  u32 LE zlib.crc32 of everything before

A snapshot is only a cache of what the block files say: any mismatch (checksum,
byte order, item size, block sizes/mtimes, checked by the caller) means "scan
the blocks instead". It is written to a temporary name, fsynced and renamed,
so a crash never leaves a half-written snapshot under the real name.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from array import array
from pathlib import Path
from typing import Any

MAGIC = b"NJSSNAP\x01"
_U32 = struct.Struct("<I")


class SnapshotError(Exception):
    """The snapshot is unusable (the caller falls back to a scan)."""


def write_snapshot(path: Path, meta: dict[str, Any], arrays: dict[str, array]) -> None:
    full = dict(meta)
    full["byteorder"] = sys.byteorder
    full["arrays"] = [[name, a.typecode, a.itemsize, len(a)] for name, a in arrays.items()]
    encoded = json.dumps(full, separators=(",", ":")).encode()
    tmp = path.with_name(path.name + ".tmp")
    crc = 0
    try:
        with open(tmp, "wb") as fh:
            for part in (MAGIC, _U32.pack(len(encoded)), encoded):
                fh.write(part)
                crc = zlib.crc32(part, crc)
            for a in arrays.values():
                raw = memoryview(a).cast("B")
                fh.write(raw)
                crc = zlib.crc32(raw, crc)
                raw.release()
            fh.write(_U32.pack(crc))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no snapshot: the next open scans the blocks
        raise


def read_snapshot(path: Path) -> tuple[dict[str, Any], dict[str, array]]:
    raw = path.read_bytes()
    if len(raw) < len(MAGIC) + 8 or not raw.startswith(MAGIC):
        raise SnapshotError("not a snapshot file")
    body = memoryview(raw)[:-4]
    if zlib.crc32(body) != _U32.unpack_from(raw, len(raw) - 4)[0]:
        raise SnapshotError("snapshot checksum mismatch")
    (meta_len,) = _U32.unpack_from(raw, len(MAGIC))
    pos = len(MAGIC) + 4
    try:
        meta = json.loads(bytes(body[pos : pos + meta_len]))
    except ValueError as err:
        raise SnapshotError(f"snapshot metadata is not JSON: {err}") from err
    pos += meta_len
    if meta.get("byteorder") != sys.byteorder:
        raise SnapshotError("snapshot written with another byte order")
    arrays: dict[str, array] = {}
    for name, typecode, itemsize, count in meta["arrays"]:
        a = array(typecode)
        if a.itemsize != itemsize:
            raise SnapshotError(f"array {name}: item size {itemsize} != {a.itemsize}")
        nbytes = itemsize * count
        if pos + nbytes > len(body):
            raise SnapshotError(f"array {name} runs past the end of the snapshot")
        a.frombytes(body[pos : pos + nbytes])
        arrays[name] = a
        pos += nbytes
    if pos != len(body):
        raise SnapshotError("trailing bytes after the snapshot arrays")
    return meta, arrays
