"""The build of jetstream-server: its hot modules compiled by mypyc when possible.

mypyc (it ships with mypy) turns the type-annotated modules of `COMPILED` into C
extensions; the same sources are the pure-Python server, and they stay in the
wheel beside the extensions (Python imports the extension when there is one).
`JETSTREAM_SERVER_COMPILE` chooses:

- `auto` (the default): compile; if that fails (no C compiler, no Python headers, an
  interpreter mypyc does not support), say why and build the pure-Python server;
- `1`: compile, and fail the build if that fails;
- `0`: the pure-Python server.

`jetstream_server.app.speedups.compiled()` says which one is installed. docs/server-speedups.md
has the figures.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent

# the modules every published message or delivered batch goes through (profiles in
# docs/performance.md); paths under src/jetstream_server. The stores compile with their pages,
# subject table and blocks (compiled without them, publishing was no cheaper, and reads were slower
# until the run read stopped unboxing its ints: docs/server-speedups.md); the consumers' delivery
# runs compile with the message runs they read (alone, they gained nothing)
COMPILED = [
    "core/protocol.py",
    "core/subjects.py",
    "core/routing.py",
    "core/session.py",
    "store/codec.py",
    "store/index.py",
    "store/indexed.py",
    "store/file.py",
    "store/memory.py",
    "store/pages.py",
    "store/subject_table.py",
    "store/blocks.py",
    "store/message.py",
    "store/runs.py",
    "jetstream/stream.py",
    "jetstream/publish.py",
    "jetstream/intake.py",
    "jetstream/dedup.py",
    "jetstream/limits.py",
    "jetstream/pub_ack.py",
    "jetstream/consumer/acks.py",
    "jetstream/consumer/delivery.py",
    "jetstream/consumer/ack_tracker.py",
]


def _mode() -> str:
    mode = os.environ.get("JETSTREAM_SERVER_COMPILE", "auto").strip().lower()
    if mode not in ("auto", "1", "0"):
        sys.exit(f"JETSTREAM_SERVER_COMPILE={mode!r}: use auto, 1 or 0")
    return mode


def _say(message: str) -> None:
    print(f"jetstream-server build: {message}", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """Builds the compiled modules; in `auto` mode a failure leaves none of them (a
    partial set would fail to import) and the pure-Python server is installed."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # a compiler error, missing headers: anything
            if _mode() == "1":
                raise
            _say(f"compiling failed ({exc}); installing the pure-Python server")
            for ext in self.extensions:
                built = Path(self.get_ext_fullpath(ext.name))
                built.unlink(missing_ok=True)


def _ext_modules() -> list[Any]:
    mode = _mode()
    if mode == "0":
        return []
    try:
        if platform.python_implementation() != "CPython":
            raise RuntimeError(f"mypyc builds for CPython, not {platform.python_implementation()}")
        from mypyc.build import mypycify

        # from src/, so that mypy names the modules jetstream_server.* (not src.jetstream_server.*);
        # the C sources go to an absolute build directory for build_ext, which runs from here
        os.chdir(HERE / "src")
        return list(
            mypycify(
                [
                    # mypy's defaults, not a configuration found above (the repository's strict
                    # one checks for the development environment), a cache of this build's own,
                    # and the optional extras (uvloop, orjson, bcrypt...) not installed here
                    f"--config-file={os.devnull}",
                    f"--cache-dir={HERE / 'build' / 'mypy-cache'}",
                    "--ignore-missing-imports",
                    *(f"jetstream_server/{path}" for path in COMPILED),
                ],
                opt_level="3",
                group_name="jetstream_server",  # its runtime library: jetstream_server__mypyc
                target_dir=str(HERE / "build" / "mypyc"),
            )
        )
    except (Exception, SystemExit) as exc:  # no mypy, or it refused a module (mypy exits)
        if mode == "1":
            raise
        _say(f"not compiled ({exc!r}); installing the pure-Python server")
        return []
    finally:
        os.chdir(HERE)


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
