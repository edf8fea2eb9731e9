"""`jetstream_server.app.speedups`, `core.compact_json` and `store.codec`'s CRC-32: what a mode
gives, with and without the extra's packages importable, the same bytes from both JSON encoders
and the same checksums from both CRC-32s."""

from __future__ import annotations

import asyncio
import json
import sys
import zlib
from collections.abc import Iterator

import pytest

from jetstream_server.app.speedups import (
    SPEEDUPS_ENV,
    SpeedupsUnavailable,
    build_line,
    choose,
    compiled,
    holds_first_bytes,
    requested_mode,
    run,
)
from jetstream_server.config import ServerConfig, TlsSettings
from jetstream_server.core import compact_json
from jetstream_server.jetstream.consumer.store import decode_line, encode_line
from jetstream_server.store import codec


def _hide(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Packages as if not installed (an import of a None entry of sys.modules fails)."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture(autouse=True)
def switches_restored() -> Iterator[None]:
    json_before, crc_before = compact_json.in_use(), codec.crc32_in_use()
    yield
    compact_json.use_orjson(json_before)
    codec.use_isal(crc_before is not zlib.crc32)


async def _loop_module() -> str:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()).__module__


def test_mode_comes_from_the_argument_then_the_environment_then_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SPEEDUPS_ENV, raising=False)
    assert requested_mode() == "auto"
    monkeypatch.setenv(SPEEDUPS_ENV, " OFF ")
    assert requested_mode() == "off"
    assert requested_mode("on") == "on"
    monkeypatch.setenv(SPEEDUPS_ENV, "")
    assert requested_mode() == "auto"


@pytest.mark.parametrize("bad", ["yes", "uvloop", "1"])
def test_an_unknown_mode_names_the_choices(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv(SPEEDUPS_ENV, bad)
    with pytest.raises(SpeedupsUnavailable, match=f"JETSTREAM_SPEEDUPS: '{bad}' is not one of auto, on, off"):
        choose()
    with pytest.raises(SpeedupsUnavailable, match=f"speedups: '{bad}' is not one of"):
        choose(bad)


def test_off_is_the_standard_library_whatever_is_installed() -> None:
    choice = choose("off")
    assert (choice.uses_uvloop, choice.uses_orjson, choice.loop_name) == (False, False, "asyncio")
    assert choice.describe() == "Speedups: none, event loop asyncio, JSON json, CRC-32 zlib (turned off)"
    assert run(_loop_module(), choice).startswith("asyncio")
    assert not compact_json.in_use()
    assert codec.crc32_in_use() is zlib.crc32


def test_without_the_extra_auto_falls_back_and_on_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "uvloop", "orjson", "isal")
    choice = choose("auto")
    assert (choice.uses_uvloop, choice.uses_orjson, choice.uses_isal) == (False, False, False)
    assert choice.describe() == ("Speedups: none, event loop asyncio, JSON json, CRC-32 zlib "
                                 "(not installed: pip install 'jetstream-server[speedups]')")
    assert run(_loop_module(), choice).startswith("asyncio")
    assert codec.crc32_in_use() is zlib.crc32
    with pytest.raises(SpeedupsUnavailable, match=r"speedups on, but uvloop does not import .*\[speedups\]"):
        choose("on")


def test_one_package_missing_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("orjson")
    _hide(monkeypatch, "uvloop")
    choice = choose("auto")
    assert (choice.uses_uvloop, choice.uses_orjson) == (False, True)
    assert choice.describe().endswith("; uvloop not installed)")
    with pytest.raises(SpeedupsUnavailable, match="uvloop does not import"):
        choose("on")


def test_auto_and_on_use_all_three_when_installed() -> None:
    pytest.importorskip("uvloop")
    pytest.importorskip("orjson")
    pytest.importorskip("isal")
    for mode in ("auto", "on"):
        choice = choose(mode)
        assert choice.uses_uvloop and choice.loop_name.startswith("uvloop ")
        assert choice.uses_orjson and choice.json_name.startswith("orjson ")
        assert choice.uses_isal and choice.crc_name.startswith("isal ")
        assert choice.describe().startswith(
            f"Speedups: event loop {choice.loop_name}, JSON {choice.json_name}, CRC-32 {choice.crc_name} "
            "(turn off with")
        assert run(_loop_module(), choice).startswith("uvloop")
        assert compact_json.in_use()
        assert codec.crc32_in_use() is not zlib.crc32


def test_isal_missing_is_named_and_the_store_checksums_with_zlib(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop")
    _hide(monkeypatch, "isal")
    choice = choose("auto")
    assert not choice.uses_isal and choice.describe().endswith("; isal not installed)")
    run(_loop_module(), choice)
    assert codec.crc32_in_use() is zlib.crc32
    with pytest.raises(SpeedupsUnavailable, match="isal does not import"):
        choose("on")


RECORDS = [
    codec.encode_record(codec.KIND_MSG, 7, 1_764_300_000_123_456_789, b"orders.eu", b"", b"x" * 128),
    codec.encode_record(codec.KIND_MSG, 2**40, -5, "sübject".encode(), b"NATS/1.0\r\nA: 1\r\n\r\n", b""),
    codec.encode_record(codec.KIND_DELETE, 9, 0, b"", b"", b""),
    codec.encode_block_header(1, 1_764_300_000_000_000_000),
]


def test_both_crcs_seal_and_check_records_alike() -> None:
    """Records and block headers sealed by either CRC-32 read back under the other (a store
    written with the extra opens without it, and back), and a flipped byte fails under both."""
    pytest.importorskip("isal")
    assert codec.use_isal(True)
    fast = [codec.encode_record(codec.KIND_MSG, 7, 1, b"s", b"", b"x" * n) for n in (0, 1, 63, 4096)]
    assert not codec.use_isal(False)
    plain = [codec.encode_record(codec.KIND_MSG, 7, 1, b"s", b"", b"x" * n) for n in (0, 1, 63, 4096)]
    assert fast == plain
    for on in (True, False):
        codec.use_isal(on)
        for record in RECORDS[:3] + fast:
            assert codec.checksum_holds(record) and codec.checksum_holds(memoryview(record))
            damaged = bytearray(record)
            damaged[len(record) // 2] ^= 0x10
            assert not codec.checksum_holds(bytes(damaged))
        assert codec.decode_block_header(RECORDS[3])[0] == 1


STATES = [
    {"g": 3, "d": [10, 12], "f": [9, 11], "p": [[12, 10, 1_764_300_000_123_456_789]], "u": [11],
     "r": [[12, 2]], "ru": [], "x": []},
    {"delivered": [0, 0], "ack_floor": [0, 0], "pending": [], "redelivered": [], "dropped": [], "gen": 1},
    {"g": 1, "d": [2**64 + 5, 1]},  # beyond orjson's integers: the standard library writes it
]


@pytest.mark.parametrize("body", STATES, ids=["delta", "whole", "huge"])
def test_both_encoders_write_the_same_bytes(body: dict[str, object]) -> None:
    pytest.importorskip("orjson")
    assert compact_json.use_orjson(True)
    fast = compact_json.dumps(body)
    fast_line = encode_line(body)
    assert not compact_json.use_orjson(False)
    plain = compact_json.dumps(body)
    assert fast == plain == json.dumps(body, separators=(",", ":")).encode()
    assert fast_line == encode_line(body) and decode_line(fast_line) == body


def test_tls_handshake_first_with_a_fallback_keeps_asyncios_loop() -> None:
    """uvloop starts reading right after connection_made, so a connection cannot wait unread for
    its first bytes: such a config runs on asyncio's loop, and the log line says why."""
    pytest.importorskip("uvloop")
    waiting = ServerConfig(tls=TlsSettings(enabled=True, handshake_first=True, handshake_first_fallback_s=0.05))
    at_once = ServerConfig(tls=TlsSettings(enabled=True, handshake_first=True))
    assert holds_first_bytes(waiting) and not holds_first_bytes(at_once) and not holds_first_bytes(ServerConfig())
    choice = choose("on", hold_first_bytes=True)
    assert not choice.uses_uvloop and choice.loop_name == "asyncio"
    assert choice.describe().endswith("; uvloop not used: tls handshake_first with a fallback delay)")
    assert choose("on", hold_first_bytes=False).uses_uvloop


def test_the_installed_server_is_the_build_the_install_asked_for() -> None:
    """`make install` compiles the hot modules (server/setup.py, JETSTREAM_SERVER_COMPILE=auto):
    a build that fell back to pure Python (no C compiler?) is said here, not found in a benchmark.
    With JETSTREAM_SERVER_COMPILE=0 in the environment the pure build is expected."""
    import os

    from jetstream_server.core import session

    wanted = os.environ.get("JETSTREAM_SERVER_COMPILE", "auto").strip().lower() != "0"
    assert compiled() is wanted, (build_line(), session.__file__)
    assert build_line().startswith("Build: hot modules compiled" if wanted else "Build: pure Python")
