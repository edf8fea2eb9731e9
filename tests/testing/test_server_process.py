"""jetstream_testing.ServerProcess: a restart returns only once the new process is ready.

The stand-in server is a small Python script: it prints nats-server's start lines after a
delay, and leaves a child holding its output pipe open for a while after it exits, so the
previous process's end of output arrives while the next start is waiting. Before the fix
that late end of output woke the new start, which returned with the old port before the new
process had printed a line.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from jetstream_testing.process import ServerProcess

STAND_IN = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    delay = float(sys.argv[1])
    # a child that inherits stdout keeps the pipe open after this process exits
    subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({delay} + 1.0)"])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    time.sleep(delay)
    print("[1] Listening for client connections on 127.0.0.1:4999", flush=True)
    print("[1] Server is ready", flush=True)
    while True:
        time.sleep(1)
    """
)


def test_restart_waits_for_the_new_process(tmp_path: Path) -> None:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN, encoding="utf-8")
    server = ServerProcess([sys.executable, str(script)], args=[], startup_timeout=20)
    server.argv = lambda: [sys.executable, str(script), "2.0"]  # type: ignore[method-assign]
    server.start()
    try:
        first = server.proc
        server.restart()
        assert server.proc is not first
        # the new process printed its own ready line before start() returned
        assert any("Server is ready" in line for line in server.log), server.log
        assert server.port == 4999
    finally:
        server.stop()
