"""The hostile-client suite as a command: stall and memory figures per expensive input.

    python -m jobs.hostile                 # every scenario, both servers (about 10 minutes)
    python -m jobs.hostile --quick         # small sizes (tests run it so the command cannot rot)
    python -m jobs.hostile --only storm    # the scenarios whose name holds the word

For each scenario (jetstream_testing.hostile.SCENARIOS) and server (the bundled
server, nats-server), a fresh server process with the same config; a probe client
times PING round trips while the hostile client works; prints the worst round trip
(how long everyone else was held), the median, the most CPU the bundled server's
loop spent within one round trip (what a quiet machine would show), the server's
RSS afterwards and what the hostile client saw, as a Markdown table. Wiring only; the suite lives in
jetstream_testing.hostile. Exit status 0 when every scenario ran, 1 when one failed.
"""

from __future__ import annotations

import argparse
import sys

from jetstream_testing.hostile import FULL, QUICK, Figure, format_table, run_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.hostile", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--only", help="run the scenarios whose name holds this text")
    parser.add_argument("--servers", default="bundled,nats-server", help="comma separated kinds")
    args = parser.parse_args(argv)

    def progress(f: Figure) -> None:
        cpu = "" if f.loop_cpu_ms is None else f" (loop CPU {f.loop_cpu_ms:.0f} ms)"
        print(f"{f.server:11} {f.worst_rtt_ms:8.0f} ms{cpu} {f.rss_mib:7.0f} MiB  {f.scenario}: {f.outcome}",
              file=sys.stderr, flush=True)

    kinds = [k.strip() for k in args.servers.split(",") if k.strip()]
    figures = run_suite(kinds, QUICK if args.quick else FULL, args.only, progress)
    print(format_table(figures))
    return 1 if any(f.outcome.startswith("failed") for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
