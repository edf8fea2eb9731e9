"""The file store's index snapshot: one file written on clean close, read on open.

Layout (version 2):

    8 bytes  magic b"NJSSNAP\\x02"
    ...      page images: each page's columns, raw native-order bytes; where
             each starts, its length and CRC are in the metadata
    ...      named arrays, raw native-order bytes (listed in the metadata)
    M bytes  JSON: caller metadata plus "arrays": [[name, typecode, itemsize,
             count, offset], ...], "images": [[offset, length, crc], ...] and
             "byteorder"
    4 bytes  u32 LE M
    4 bytes  u32 LE zlib.crc32 of everything before

Reading checks the whole file's CRC in bounded chunks but loads only the
metadata and the named arrays: the page images stay in the file, which the
store keeps as its page swap (`pages.PageSwap`), so an open costs memory for
the summaries only, whatever the stream's size. A snapshot is only a cache
of what the block files say: any mismatch (checksum, byte order, item size,
block sizes/mtimes, checked by the caller) means "scan the blocks instead".
It is written to a temporary name, fsynced and renamed, so a crash never
leaves a half-written snapshot under the real name.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

MAGIC = b"NJSSNAP\x02"
_U32 = struct.Struct("<I")
_TAIL = 8
_CHUNK = 4 << 20


class SnapshotError(Exception):
    """The snapshot is unusable (the caller falls back to a scan)."""


def _put(fh: BinaryIO, data: bytes | memoryview, crc: int) -> int:
    fh.write(data)
    return zlib.crc32(data, crc)


def write_snapshot(
    path: Path, meta: dict[str, Any], arrays: dict[str, array[int]], images: Iterable[bytes]
) -> None:
    full = dict(meta)
    full["byteorder"] = sys.byteorder
    tmp = path.with_name(path.name + ".tmp")
    crc = 0
    try:
        with open(tmp, "wb") as fh:
            crc = _put(fh, MAGIC, crc)
            pos = len(MAGIC)
            placed: list[list[int]] = []
            for image in images:
                crc = _put(fh, image, crc)
                placed.append([pos, len(image), zlib.crc32(image)])
                pos += len(image)
            listed: list[list[Any]] = []
            for name, a in arrays.items():
                raw = memoryview(a).cast("B")
                crc = _put(fh, raw, crc)
                listed.append([name, a.typecode, a.itemsize, len(a), pos])
                pos += len(raw)
                raw.release()
            full["images"] = placed
            full["arrays"] = listed
            encoded = json.dumps(full, separators=(",", ":")).encode()
            crc = _put(fh, encoded, crc)
            crc = _put(fh, _U32.pack(len(encoded)), crc)
            fh.write(_U32.pack(crc))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no snapshot: the next open scans the blocks
        raise


def read_snapshot(path: Path) -> tuple[dict[str, Any], dict[str, array[int]]]:
    """The metadata (with "images", each page image's [offset, length, crc])
    and the named arrays; raises SnapshotError when the file is not intact."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < len(MAGIC) + _TAIL or fh.read(len(MAGIC)) != MAGIC:
            raise SnapshotError("not a snapshot file (or an older version)")
        fh.seek(size - _TAIL)
        meta_len, crc = struct.unpack("<II", fh.read(_TAIL))
        body_end = size - 4
        meta_at = size - _TAIL - meta_len
        if meta_at < len(MAGIC):
            raise SnapshotError("snapshot metadata length is out of range")
        fh.seek(0)
        got, pos = 0, 0
        while pos < body_end:
            chunk = fh.read(min(_CHUNK, body_end - pos))
            if not chunk:
                break
            got = zlib.crc32(chunk, got)
            pos += len(chunk)
        if got != crc:
            raise SnapshotError("snapshot checksum mismatch")
        fh.seek(meta_at)
        try:
            meta = json.loads(fh.read(meta_len))
        except ValueError as err:
            raise SnapshotError(f"snapshot metadata is not JSON: {err}") from err
        if meta.get("byteorder") != sys.byteorder:
            raise SnapshotError("snapshot written with another byte order")
        arrays: dict[str, array[int]] = {}
        for name, typecode, itemsize, count, offset in meta["arrays"]:
            a = array(typecode)
            if a.itemsize != itemsize:
                raise SnapshotError(f"array {name}: item size {itemsize} != {a.itemsize}")
            nbytes = itemsize * count
            if offset < len(MAGIC) or offset + nbytes > meta_at:
                raise SnapshotError(f"array {name} lies outside the snapshot body")
            fh.seek(offset)
            a.frombytes(fh.read(nbytes))
            arrays[name] = a
        for offset, length, _crc in meta["images"]:
            if offset < len(MAGIC) or offset + length > meta_at:
                raise SnapshotError("a page image lies outside the snapshot body")
    return meta, arrays
