"""nats.py's own test suites against nats-server and the bundled server (a developer command).

    python -m jobs.client_suites --natspy PATH [--python313 PYTHON] [--only NAME] [--work DIR]

PATH is a checkout of the nats.py repository (its `nats`, `nats-core`,
`nats-jetstream`, `nats-key-value` and `nats-server` directories). Each suite runs
on both servers through a `nats-server` shim first on PATH; prints passed/failed
counts per server and every test that passes on nats-server but not on the
bundled server. Not part of `make test`: CI has no nats.py checkout (no network).
Wiring only; the logic is jetstream_testing.client_suites. Exit status 1 when a
test passes on nats-server only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from jetstream_testing.client_suites import format_report, run_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.client_suites", description=__doc__.splitlines()[0])
    parser.add_argument("--natspy", required=True, type=Path, help="a nats.py checkout")
    parser.add_argument("--python313", help="a Python 3.13 for the split clients' suites")
    parser.add_argument("--only", help="the suites whose name holds this text")
    parser.add_argument("--work", type=Path, help="where venvs and reports go (default: a temporary dir)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="client-suites-"))
    rows = run_all(args.natspy.resolve(), work, args.python313, args.only)
    print(format_report(rows))
    return 1 if any(only for _, _, only in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
