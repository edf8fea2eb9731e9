"""`jetstream_server.app.speedups`: which loop a mode gives, with and without uvloop importable."""

from __future__ import annotations

import asyncio
import sys

import pytest

from jetstream_server.app import speedups
from jetstream_server.app.speedups import SPEEDUPS_ENV, SpeedupsUnavailable, choose, requested_mode, run


@pytest.fixture
def no_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    """uvloop as if not installed (an import of a None entry of sys.modules fails)."""
    monkeypatch.setitem(sys.modules, "uvloop", None)


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


def test_off_is_asyncio_whatever_is_installed() -> None:
    choice = choose("off")
    assert (choice.uses_uvloop, choice.loop_name) == (False, "asyncio")
    assert choice.describe() == "Speedups: none, event loop asyncio (turned off)"


@pytest.mark.usefixtures("no_uvloop")
def test_without_uvloop_auto_falls_back_and_on_is_refused() -> None:
    choice = choose("auto")
    assert not choice.uses_uvloop
    assert "pip install 'jetstream-server[speedups]'" in choice.describe()
    with pytest.raises(SpeedupsUnavailable, match=r"speedups on, but uvloop does not import .*\[speedups\]"):
        choose("on")


@pytest.mark.usefixtures("no_uvloop")
def test_run_on_asyncio_is_asyncio_run() -> None:
    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert run(which(), choose("auto")).startswith("asyncio")


def test_auto_and_on_pick_uvloop_when_installed() -> None:
    pytest.importorskip("uvloop")

    async def which() -> str:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop()).__module__

    for mode in ("auto", "on"):
        choice = choose(mode)
        assert choice.uses_uvloop and choice.loop_name.startswith("uvloop ")
        assert choice.describe().startswith(f"Speedups: event loop {choice.loop_name} (turn off with")
        assert run(which(), choice).startswith("uvloop")
    assert speedups.UVLOOP == "uvloop"
