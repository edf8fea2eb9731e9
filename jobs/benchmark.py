"""The benchmark job: the bundled server beside the real nats-server, and the connector beside its ceiling.

    python -m jobs.benchmark            # full run (a few minutes; the README keeps its output)
    python -m jobs.benchmark --quick    # a small version (tests run it so the job cannot rot)

Wiring only; workloads live in `jobs.bench` (nats-py: `natspy`; Spark:
`connector`, `ceiling`; file store: `filestore`; the store backends in
process, only with `--only store`: `store_micro`). Every server runs in its own
process (`ServerProcess`), never in this one, so client and server do not
share a GIL. Prints two tables (comparisons with ratios and the issue's
targets; single figures) and, with `--markdown PATH`, writes them as a
Markdown section with the date, machine and versions. Exit status: 0 when
every workload ran (a missed target is reported, not an error), 1 when a
workload failed or saw the wrong number of messages.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from jetstream_testing.process import nats_server_binary
from jobs.bench import filestore, natspy
from jobs.bench.results import Comparison, Measure, render_comparisons, render_measures
from jobs.bench.servers import KINDS, running

log = logging.getLogger(__name__)

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Sizes:
    natspy: dict[str, int]
    size: int  # payload bytes of the throughput workloads
    connector_rows: int
    connector_kinds: tuple[str, ...]
    sync_count: int
    store_rows: int
    store_size: int


FULL = Sizes(
    natspy={"sync publish": 5_000, "publish_async": 100_000, "pull fetch + ack": 50_000, "ordered consumer": 100_000},
    size=128,
    connector_rows=1_000_000,
    connector_kinds=KINDS,
    sync_count=20_000,
    store_rows=1_000_000,
    store_size=1024,  # 1M x 1 KiB: a 1 GB stream
)
QUICK = Sizes(
    natspy={"sync publish": 300, "publish_async": 3_000, "pull fetch + ack": 2_000, "ordered consumer": 3_000},
    size=128,
    connector_rows=10_000,
    connector_kinds=("bundled",),
    sync_count=1_000,
    store_rows=5_000,
    store_size=1024,
)
TARGET_SERVER = 0.8  # bundled >= 0.8x nats-server on every nats-py workload
TARGET_READ = 0.4  # connector read >= 40% of the ceiling
TARGET_SINK = 1.5  # sink >= 1.5x publish_async


def versions() -> str:
    import pyspark

    try:
        real = subprocess.run(
            [nats_server_binary(), "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        real = f"nats-server ({exc})"
    try:
        java_out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=20, check=False)
        java = (java_out.stderr or java_out.stdout).splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError) as exc:
        java = f"java ({exc})"
    from importlib.metadata import version

    return (
        f"Python {platform.python_version()}, pyspark {pyspark.__version__}, nats-py {version('nats-py')}, "
        f"{real}, {java}"
    )


def machine() -> str:
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"


def run_natspy(root: Path, sizes: Sizes, out: list[Comparison], say) -> None:  # type: ignore[no-untyped-def]
    results: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        with running(kind, root, name="natspy") as srv:
            results[kind] = asyncio.run(natspy.run_all(srv.url, sizes.natspy, sizes.size))
        say(f"nats-py on {kind}: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in results[kind].items()))
    for workload in natspy.WORKLOADS:
        out.append(
            Comparison(
                "nats-py",
                f"{workload} ({sizes.natspy[workload]:,} x {sizes.size} B)",
                "msgs/s",
                "bundled",
                results["bundled"][workload],
                "nats-server",
                results["nats-server"][workload],
                TARGET_SERVER,
            )
        )


def run_connector(root: Path, sizes: Sizes, out: list[Comparison], say) -> object:  # type: ignore[no-untyped-def]
    from jobs.bench import connector

    spark = connector.spark_session()
    rows = sizes.connector_rows
    # Warm up the JVM and the Python workers (batch and streaming paths) so that the first
    # workload of each kind is not charged for them.
    connector.ceiling_batch_read(spark, 1000, sizes.size)
    connector.ceiling_stream_read(spark, 1000, sizes.size)
    ceiling_stream = connector.ceiling_stream_read(spark, rows, sizes.size)
    ceiling_batch = connector.ceiling_batch_read(spark, rows, sizes.size)
    say(f"ceiling: streaming {ceiling_stream:,.0f} rows/s, batch {ceiling_batch:,.0f} rows/s")
    for kind in sizes.connector_kinds:
        with running(kind, root, name="connector") as srv:
            sink = connector.sink_write(spark, srv.url, rows, sizes.size)
            pub = connector.publish_async_rate(srv.url, min(rows, 200_000), sizes.size)
            stream = connector.stream_read(spark, srv.url, rows)
            batch = connector.batch_read(spark, srv.url, rows)
        say(f"connector on {kind}: sink {sink:,.0f}/s, publish_async {pub:,.0f}/s, "
            f"streaming read {stream:,.0f}/s, batch read {batch:,.0f}/s")
        label = f"{rows:,} x {sizes.size} B, {kind}"
        out += [
            Comparison("connector", f"streaming read, AvailableNow -> noop ({label})", "rows/s",
                       "jetstream", stream, "ceiling", ceiling_stream, TARGET_READ),
            Comparison("connector", f"batch read -> noop ({label})", "rows/s",
                       "jetstream", batch, "ceiling", ceiling_batch, TARGET_READ),
            Comparison("connector", f"sink, batch write ({label})", "msgs/s",
                       "jetstream sink", sink, "publish_async", pub, TARGET_SINK),
        ]
    return spark


def run_filestore(  # type: ignore[no-untyped-def]
    root: Path, sizes: Sizes, comparisons: list[Comparison], measures: list[Measure], spark, say
) -> None:
    rates: dict[tuple[str, bool], float] = {}
    for kind in KINDS:
        for sync_always in (False, True):
            rates[(kind, sync_always)] = filestore.publish_rate(
                kind, root, sync_always=sync_always, count=sizes.sync_count, size=sizes.size
            )
        say(f"file store on {kind}: publish_async {rates[(kind, False)]:,.0f}/s, "
            f"with sync_always {rates[(kind, True)]:,.0f}/s")
    for sync_always in (False, True):
        comparisons.append(
            Comparison("file store", f"publish_async, sync_always {'on' if sync_always else 'off'} "
                       f"({sizes.sync_count:,} x {sizes.size} B)", "msgs/s",
                       "bundled", rates[("bundled", sync_always)],
                       "nats-server", rates[("nats-server", sync_always)], TARGET_SERVER)
        )
    figures = {}
    for kind in KINDS:
        figures[kind] = filestore.fill_restart_memory(
            kind, root, rows=sizes.store_rows, size=sizes.store_size,
            spark=spark if sizes.store_rows > 50_000 else None,
        )
        f = figures[kind]
        say(f"file store on {kind}: {f.rows:,} msgs ({f.stored_bytes / MB:,.0f} MB) restart {f.restart_s:.2f}s, "
            f"RSS {f.rss_after_fill / MB:,.0f} MB after fill, {f.rss_after_restart / MB:,.0f} MB after restart")
    b, r = figures["bundled"], figures["nats-server"]
    what = f"{b.rows:,} msgs, {b.stored_bytes / MB:,.0f} MB"
    comparisons.append(Comparison("file store", f"restart until the stream answers ({what})", "s",
                                  "bundled", b.restart_s, "nats-server", r.restart_s))
    for kind, f in figures.items():
        measures += [
            Measure("file store", f"server RSS after filling ({what})", "MB", kind, f.rss_after_fill / MB),
            Measure("file store", f"server RSS after restart ({what})", "MB", kind, f.rss_after_restart / MB),
        ]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jobs.benchmark", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a small version (well under a minute on a quiet machine)")
    p.add_argument("--only", choices=("natspy", "connector", "filestore", "store"), action="append",
                   help="run only these families (repeatable; 'store', the store backends in process, "
                   "runs only when named)")
    p.add_argument("--markdown", help="also write the result as a Markdown section to this file")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sizes = QUICK if args.quick else FULL
    families = set(args.only or ("natspy", "connector", "filestore"))
    if "store" in families:
        from jobs.bench import store_micro

        store_micro.main(["--msgs", str(sizes.store_rows // 5)])
        families.discard("store")
        if not families:
            return 0
    started = time.monotonic()

    def say(line: str) -> None:
        sys.stdout.write(f"[{time.monotonic() - started:6.1f}s] {line}\n")
        sys.stdout.flush()

    comparisons: list[Comparison] = []
    measures: list[Measure] = []
    spark = None
    from pyspark.sql import SparkSession

    # A session that already exists (a notebook, the tests) is used and left running.
    owns_session = SparkSession.getActiveSession() is None
    try:
        with tempfile.TemporaryDirectory(prefix="jetstream-bench-") as tmp:
            root = Path(tmp)
            if "natspy" in families:
                run_natspy(root, sizes, comparisons, say)
            if "connector" in families:
                spark = run_connector(root, sizes, comparisons, say)
            if "filestore" in families:
                if spark is None and sizes.store_rows > 50_000:
                    from jobs.bench import connector

                    spark = connector.spark_session()
                run_filestore(root, sizes, comparisons, measures, spark, say)
    except natspy.BenchError as exc:
        sys.stderr.write(f"benchmark failed: {exc}\n")
        return 1
    finally:
        if spark is not None and owns_session:
            spark.stop()  # type: ignore[attr-defined]

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = (
        f"{'Quick' if args.quick else 'Full'} benchmark, {when}; {machine()}; {versions()}; "
        f"took {time.monotonic() - started:.0f}s"
    )
    text = header + "\n\n" + render_comparisons(comparisons)
    if measures:
        text += "\n\n" + render_measures(measures)
    missed = [c for c in comparisons if c.met is False]
    text += "\n\n" + (
        "every target met" if not missed else "targets missed: " + "; ".join(f"{c.workload} {c.ratio:.2f}x < {c.target:g}x" for c in missed)
    )
    sys.stdout.write("\n" + text + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
