"""The main job (`make demo`): orders from JetStream through an exactly-once Spark pipeline.

    python -m jobs.orders_pipeline [--orders N] [--servers nats://...] [--continuous]
        [--master spark://host:7077 [--py-files spark_jetstream.zip] [--conf key=value ...]]
        [--replicas 3] [--http-port 8222]

Wiring only (the logic is in `jobs.orders`):
1. the server: the bundled one embedded in this process (store under
   `--data-dir`, default ./jetstream-data) unless `--servers` names one; its
   monitoring port (`--http-port`, default 8222, a free one when that is taken)
   serves the dashboard, whose address it prints (for `--servers`: the
   `jetstream dashboard` command that shows it);
2. the streams (`jobs.orders.streams`), then a deterministic sample of `--orders`
   orders published with message ids from a child process (a re-run is rejected
   as duplicates); Spark's JVM starts meanwhile;
3. two checkpointed streaming queries on local Spark, or on the cluster of
   `--master` (`jobs.orders.pipeline`): clean copy + dead letters, and windowed
   revenue per region; `--py-files` ships the connector to the executors,
   `--conf` sets Spark settings (e.g. `spark.driver.host`), `--replicas` the
   replicas of the streams it creates (3 on a nats-server cluster);
4. with `--continuous`, a publisher keeps sending new orders and the queries run
   on a processing-time trigger until Ctrl-C (or `--duration` seconds); the
   job then stops the publisher and the queries and drains what is left;
5. a summary table (with the time of each phase and each query's events/s per
   micro-batch) and self-checks (`jobs.orders.report`); exit 1 when the counts
   do not add up, 0 otherwise.

Checkpoints live under `<data-dir>/checkpoints/<server>` so that a second run
resumes where the first stopped and adds nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from jobs.orders import pipeline, streams
from jobs.orders.cpu import CpuMeter
from jobs.orders.expected import Expected, WindowFigures
from jobs.orders.publisher import Outcome, PublisherProcess, SampleSpec
from jobs.orders.report import (
    Check,
    Phases,
    ProgressListener,
    batch_rate_figures,
    render_summary,
    totals_from,
)

log = logging.getLogger(__name__)

EXIT_OK, EXIT_CHECK_FAILED = 0, 1
# the job's CPU readings (jobs.orders.cpu), in order
SETUP, QUERIES = "server, streams, publishing, Spark start", "both queries"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m jobs.orders_pipeline",
        description="Publish a sample of orders to JetStream and run an exactly-once Spark pipeline on it.",
    )
    p.add_argument("--servers", help="NATS server URL(s); default: start the bundled server embedded")
    p.add_argument("--orders", type=int, default=100_000, help="orders in the sample (default 100000)")
    p.add_argument("--data-dir", default="jetstream-data", help="server store and checkpoints (default ./jetstream-data)")
    p.add_argument(
        "--batch-size", type=int, default=100_000, help="max messages per micro-batch (default 100000)"
    )
    p.add_argument("--seed", type=int, default=7, help="seed of the order generator")
    p.add_argument("--continuous", action="store_true", help="keep running with a live publisher until Ctrl-C")
    p.add_argument("--rate", type=float, default=200.0, help="orders/s of the live publisher (--continuous)")
    p.add_argument("--duration", type=float, help="with --continuous: stop after this many seconds")
    p.add_argument("--trigger", default="2 seconds", help="processing-time trigger of --continuous")
    p.add_argument("--master", help="Spark master URL (e.g. spark://host:7077); default: local Spark, 2 cores")
    p.add_argument(
        "--py-files", default="", help="comma-separated zips for the executors' Python (the connector's, see docs/deployment.md)"
    )
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    p.add_argument("--replicas", type=int, default=1, help="replicas of the streams it creates (default 1)")
    p.add_argument("--http-port", type=int, default=8222,
                   help="monitoring port of the embedded server, with the dashboard (default 8222; -1: any free port)")
    args = p.parse_args(argv)
    if any("=" not in c for c in args.conf):
        p.error("--conf takes KEY=VALUE")
    if args.replicas < 1:
        p.error("--replicas must be >= 1")
    if args.orders < 0:
        p.error("--orders must be >= 0")
    if args.batch_size < 1:
        p.error("--batch-size must be >= 1")
    if args.rate <= 0:
        p.error("--rate must be > 0")
    if not -1 <= args.http_port <= 65535:
        p.error("--http-port must be a port number or -1")
    return args


@contextlib.contextmanager
def server_url(args: argparse.Namespace, out: Any) -> Iterator[tuple[str, str]]:
    """(url, checkpoint key) of the server to use; the embedded one lives as long as the block."""
    if args.servers:
        out.write(f"dashboard: run `jetstream dashboard --server {args.servers}` and open the address it prints\n")
        yield args.servers, re.sub(r"[^A-Za-z0-9]+", "_", args.servers).strip("_")
        return
    from jetstream_server import EmbeddedServer

    store = Path(args.data_dir) / "server"
    store.mkdir(parents=True, exist_ok=True)
    with embedded_server(EmbeddedServer, str(store), args.http_port) as srv:
        out.write(f"bundled JetStream server at {srv.url} (store {store})\n")
        out.write(f"dashboard: http://127.0.0.1:{srv.http_port}/dashboard/ (open it while the job runs)\n")
        yield srv.url, "embedded"


@contextlib.contextmanager
def embedded_server(factory: Any, store: str, http_port: int) -> Iterator[Any]:
    """The embedded server with its monitoring port; a free port when `http_port` is taken."""
    try:
        srv = factory(store_dir=store, port=0, http_port=http_port).start()
    except OSError as exc:
        if http_port == -1:
            raise
        log.warning("monitoring port %d is taken (%s): using a free one", http_port, exc.strerror or exc)
        srv = factory(store_dir=store, port=0, http_port=-1).start()
    try:
        yield srv
    finally:
        srv.stop()


def finish_publishing(
    proc: PublisherProcess, started: float, args: argparse.Namespace, expected: Expected, out: Any
) -> Outcome:
    """Wait for the sample's publisher (started at `started`); add what it sent to `expected`."""

    def progress(stored: int, duplicates: int) -> None:
        rate = (stored + duplicates) / max(time.monotonic() - started, 1e-9)
        out.write(f"publishing: {stored:,} stored, {duplicates:,} duplicates ({rate:,.0f} msg/s)\n")
        out.flush()

    outcome = proc.join(progress)
    expected.merge(proc.expected)
    out.write(
        f"published {outcome.published:,} events of {args.orders:,} orders in {time.monotonic() - started:.1f}s: "
        f"{outcome.stored:,} stored, {outcome.duplicates:,} rejected as duplicates\n"
    )
    return outcome


def live_publisher(url: str, args: argparse.Namespace, expected: Expected) -> PublisherProcess:
    """--continuous: new orders (continuing ids and event times) at a steady rate."""
    spec = SampleSpec(
        orders=10**9,
        seed=args.seed,
        first_order=args.orders + 1,
        start_ms=expected.max_event_time_ms + 1,
        rate=args.rate * 2.6,  # about 2.6 events per order
    )
    return PublisherProcess(url, spec, expected.window_ms)


# Spark gives a Python worker it starts a fixed 10 s to connect back; on a crowded
# machine importing pyspark can take longer. The query stops; its checkpoint lets it
# resume where it stopped (a batch it had begun is replayed, its messages deduplicated).
WORKER_TIMEOUT: Final = "Python worker failed to connect back"
RESTARTS: Final = 2


def run_queries(spark: Any, cfg: pipeline.PipelineConfig, out: Any) -> list[Any]:
    """Run both queries to the end (every run of each, restarts included, in start order)."""
    starters = {"routed": pipeline.start_routed, "revenue": pipeline.start_revenue}
    return await_restarting({name: start(spark, cfg) for name, start in starters.items()}, starters, spark, cfg, out)


def await_restarting(
    running: dict[str, Any], starters: dict[str, Any], spark: Any, cfg: pipeline.PipelineConfig, out: Any
) -> list[Any]:
    """Wait for each query; restart one that Spark stopped for a slow Python worker (RESTARTS at most)."""
    ran: list[Any] = list(running.values())
    for name, query in running.items():
        for attempt in range(RESTARTS + 1):
            try:
                query.awaitTermination()
                break
            except Exception as exc:
                if WORKER_TIMEOUT not in str(exc) or attempt == RESTARTS:
                    raise
                out.write(f"[{name}] stopped: {WORKER_TIMEOUT} (a crowded machine); resuming from its checkpoint\n")
                query = starters[name](spark, cfg)
                ran.append(query)
    return ran


def run_continuous(
    spark: Any,
    cfg: pipeline.PipelineConfig,
    live: PublisherProcess,
    expected: Expected,
    duration: float | None,
    out: Any,
) -> tuple[list[Any], int]:
    queries = [pipeline.start_routed(spark, cfg), pipeline.start_revenue(spark, cfg)]
    live.start()
    out.write("running continuously: Ctrl-C stops publisher and pipeline cleanly\n")
    deadline = None if duration is None else time.monotonic() + duration
    try:
        while deadline is None or time.monotonic() < deadline:
            for q in queries:
                if not q.isActive:
                    raise RuntimeError(f"query {q.name} stopped: {q.exception()}")
            queries[0].awaitTermination(1)
    except KeyboardInterrupt:
        out.write("\nCtrl-C: stopping the publisher, then the queries\n")
    finally:
        live.stop()
        for q in queries:
            q.stop()
    outcome = live.join()
    expected.merge(live.expected)
    out.write(
        f"live publisher sent {outcome.published:,} events ({outcome.duplicates:,} duplicates); "
        "draining what was published before the stop\n"
    )
    return queries, outcome.duplicates


def check_counts(
    spark: Any,
    url: str,
    cfg: pipeline.PipelineConfig,
    ran: list[Any],
    before: dict[str, streams.StreamCounts],
    after: dict[str, streams.StreamCounts],
    expected: Expected,
    input_dupes: int,
) -> tuple[list[tuple[str, str]], list[Check]]:
    routed = totals_from(p for q in ran if q.name == "routed" for p in q.recentProgress)
    revenue = totals_from(p for q in ran if q.name == "revenue" for p in q.recentProgress)
    grown = {name: after[name].messages - before[name].messages for name in after}
    read = routed.observed.get("input", 0)
    valid, dead = routed.observed.get("valid", 0), routed.observed.get("dead_letter", 0)
    windows_sent = revenue.observed.get("windows", 0)
    sink_dupes = (valid + dead - grown[streams.CLEAN] - grown[streams.DLQ]) + (windows_sent - grown[streams.REVENUE])
    stored_windows, windows = pipeline.read_windows(spark, url)
    routed_cp = pipeline.checkpoint_state(cfg.checkpoint_dir / "routed")
    revenue_cp = pipeline.checkpoint_state(cfg.checkpoint_dir / "revenue")

    figures = [
        ("input published (stored)", f"{grown[streams.INPUT]:,}"),
        ("input read by the pipeline", f"{read:,}"),
        ("valid (clean copy)", f"{valid:,}"),
        ("dead-letter", f"{dead:,}"),
        ("windows written", f"{grown[streams.REVENUE]:,}"),
        ("duplicates rejected by the server", f"{input_dupes + sink_dupes:,}"),
        ("  of which input republished", f"{input_dupes:,}"),
        ("  of which sink replays", f"{sink_dupes:,}"),
        ("micro-batches (routed / revenue)", f"{routed.batches} / {revenue.batches}"),
    ] + [(f"stream {name} messages", f"{after[name].messages:,}") for name in streams.STREAMS]

    last_seq = after[streams.INPUT].last_seq
    checks = [
        Check("this run adds up", valid + dead == read, f"valid {valid:,} + dead-letter {dead:,} = read {read:,}"),
        Check(
            "sink stored no extra message",
            sink_dupes >= 0,
            f"{grown[streams.CLEAN] + grown[streams.DLQ]:,} stored for {valid + dead:,} routed rows, "
            f"{grown[streams.REVENUE]:,} for {windows_sent:,} windows",
        ),
        Check(
            "both queries caught up with the stream",
            all(cp is not None and cp.end_seq == last_seq for cp in (routed_cp, revenue_cp)) or last_seq == 0,
            f"checkpoints at seq {routed_cp.end_seq if routed_cp else 0:,} / "
            f"{revenue_cp.end_seq if revenue_cp else 0:,}, stream at {last_seq:,}",
        ),
        Check(
            "every input message routed exactly once",
            after[streams.CLEAN].messages + after[streams.DLQ].messages == after[streams.INPUT].messages,
            f"clean {after[streams.CLEAN].messages:,} + dead-letter {after[streams.DLQ].messages:,} "
            f"= input {after[streams.INPUT].messages:,}",
        ),
        Check(
            "each window written once",
            stored_windows == len(windows),
            f"{stored_windows:,} messages for {len(windows):,} distinct (window, region)",
        ),
    ]
    if after[streams.INPUT].messages == expected.total:
        closed = expected.closed_windows(revenue_cp.watermark_ms if revenue_cp else 0)
        checks += [
            Check(
                "clean and dead-letter counts match the generator",
                after[streams.CLEAN].messages == expected.valid
                and after[streams.DLQ].messages == expected.dead_letters,
                f"expected {expected.valid:,} valid and {expected.dead_letters:,} bad "
                f"({', '.join(f'{r}: {n}' for r, n in sorted(expected.reasons.items()))})",
            ),
            Check(
                "windows match the generator",
                windows == closed,
                f"{len(windows):,} windows written, {len(closed):,} closed by the watermark"
                + ("" if windows == closed else f"; differing: {differing_windows(windows, closed)[:3]}"),
            ),
        ]
    else:
        checks.append(
            Check(
                "generator comparison",
                True,
                f"skipped: stream {streams.INPUT} holds {after[streams.INPUT].messages:,} messages, "
                f"not only this run's {expected.total:,} (other data or earlier runs with other options)",
            )
        )
    return figures, checks


def differing_windows(
    written: dict[tuple[int, str], WindowFigures], expected: dict[tuple[int, str], WindowFigures]
) -> list[tuple[tuple[int, str], WindowFigures | None, WindowFigures | None]]:
    """(key, written, expected) of every window where the two differ, by key."""
    keys = sorted(k for k in written.keys() | expected.keys() if written.get(k) != expected.get(k))
    return [(k, written.get(k), expected.get(k)) for k in keys]


def cluster_spark_session(master: str, conf: dict[str, str]) -> Any:
    """A session on the cluster of `master`. Unlike the local session, the executors' Python
    is not this interpreter's path but PYSPARK_PYTHON if set, else `python3` on the workers."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName("orders-pipeline")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def spark_session(args: argparse.Namespace) -> tuple[Any, bool]:
    """(session, whether this job owns it): local Spark with 2 cores, or the cluster of --master.
    A session that already exists (a notebook, the tests) is used and left running."""
    from pyspark.sql import SparkSession

    from spark_jetstream import register
    from spark_jetstream.local import local_spark_session

    owns_session = SparkSession.getActiveSession() is None
    conf = {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.numRecentProgressUpdates": "100000",
    }
    if owns_session and not args.master:
        # one shuffle partition per local core: the revenue query's aggregation and its state
        # store run as one wave of tasks (a checkpoint keeps the count it was started with);
        # a session that exists keeps its own setting
        conf["spark.sql.shuffle.partitions"] = "2"
    conf.update(c.split("=", 1) for c in args.conf)
    if args.master:
        spark = cluster_spark_session(args.master, conf)
    else:
        spark = local_spark_session("orders-pipeline", cores=2, conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    for path in filter(None, args.py_files.split(",")):
        spark.sparkContext.addPyFile(path)
    register(spark)
    return spark, owns_session


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    out = sys.stdout
    phases = Phases()
    cpu = CpuMeter()
    cfg_base = pipeline.PipelineConfig(servers="", checkpoint_dir=Path())
    expected = Expected(window_ms=cfg_base.window_ms)
    with server_url(args, out) as (url, key):
        with phases.timed("server and streams"):
            streams.run(streams.ensure_streams(url, args.replicas))
            before = streams.run(streams.stream_counts(url))
        publishing = PublisherProcess(url, SampleSpec(orders=args.orders, seed=args.seed), expected.window_ms).start()
        publish_started = time.monotonic()
        # Spark's JVM starts while the child publishes: neither needs the other, and
        # each takes seconds. The queries start only once every event is acknowledged.
        try:
            with phases.timed("Spark session start (while publishing)"):
                spark, owns_session = spark_session(args)
        except BaseException:
            publishing.stop()
            raise
        with phases.timed("publishing (from the job's start)", since=publish_started):
            input_dupes = finish_publishing(publishing, publish_started, args, expected, out).duplicates
        cpu.mark(SETUP)
        listener = ProgressListener(out)
        spark.streams.addListener(listener)
        ran: list[Any] = []
        try:
            checkpoints = Path(args.data_dir).resolve() / "checkpoints" / key
            cfg = pipeline.PipelineConfig(servers=url, checkpoint_dir=checkpoints, max_per_batch=args.batch_size)
            if args.continuous:
                live = live_publisher(url, args, expected)
                live_cfg = pipeline.PipelineConfig(
                    servers=url,
                    checkpoint_dir=checkpoints,
                    max_per_batch=args.batch_size,
                    processing_time=args.trigger,
                )
                with phases.timed("continuous run"):
                    live_ran, live_dupes = run_continuous(spark, live_cfg, live, expected, args.duration, out)
                cpu.mark("continuous run")
                ran += live_ran
                input_dupes += live_dupes
            with phases.timed("both queries (Trigger.AvailableNow)"):
                ran += run_queries(spark, cfg, out)
            cpu.mark(QUERIES)
            with phases.timed("checks"):
                after = streams.run(streams.stream_counts(url))
                figures, checks = check_counts(spark, url, cfg, ran, before, after, expected, input_dupes)
            cpu.mark("checks")
        finally:
            spark.streams.removeListener(listener)
            if owns_session:
                spark.stop()
    figures += batch_rate_figures(ran)
    figures += phases.figures()
    read = totals_from(p for q in ran if q.name == "routed" for p in q.recentProgress).input_rows
    figures += cpu.figures({QUERIES: read})
    out.write(render_summary(figures, checks))
    ok = all(c.ok for c in checks)
    out.write("all checks passed\n" if ok else "SOME CHECKS FAILED\n")
    return EXIT_OK if ok else EXIT_CHECK_FAILED


if __name__ == "__main__":
    sys.exit(main())
