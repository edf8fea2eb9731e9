"""The sink's Python CPU per row, without Spark: one sink task's publish on `rows` rows.

Runs `publish_batches` (the code a Spark Python worker runs for one partition of
`df.write.format("jetstream")`) on Arrow batches shaped like the benchmark's sink
workload (`jobs.bench.connector.sink_write`: binary `data` of `size` bytes, the
`subject` option, content ids, Arrow batches of 10,000 rows as Spark hands them) into a
fresh stream, and prints the client process's CPU per row (and the server's, when it
started the server). A profiling helper, not part of the suite or the benchmark:

    python -m jobs.bench.sink_cpu --server nats-server --rows 300000
    python -m jobs.bench.sink_cpu --url nats://127.0.0.1:4222   # a running server

Profile the client alone against a running server with
``py-spy record -r 200 -f raw -o sink.txt -- python -m jobs.bench.sink_cpu --url ...``.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from jetstream_testing.process import ServerProcess
from jobs.bench.servers import KINDS, cpu_seconds, running
from spark_jetstream.client import LeanConnection
from spark_jetstream.options import ConnectionOptions, WriteOptions
from spark_jetstream.write.schema import WriteColumns
from spark_jetstream.write.sink_task import publish_batches

STREAM = "BENCH_SINK_CPU"
SUBJECT = "bench.sink"
BATCH_ROWS = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch's default


def arrow_batches(rows: int, size: int) -> list[pa.RecordBatch]:
    """The benchmark's rows: `lpad(id, size, "x")` as binary, in Spark-sized batches."""
    out: list[pa.RecordBatch] = []
    for start in range(0, rows, BATCH_ROWS):
        ids = pa.array(range(start, min(rows, start + BATCH_ROWS)), pa.int64())
        data = pc.utf8_lpad(pc.cast(ids, pa.string()), size, "x").cast(pa.binary())
        out.append(pa.record_batch([data], names=["data"]))
    return out


def fresh_stream(url: str) -> None:
    with LeanConnection.connect(ConnectionOptions(servers=(url,))) as conn:
        names = conn.js_api("STREAM.NAMES").get("streams") or []
        if STREAM in names:
            conn.js_api(f"STREAM.DELETE.{STREAM}")
        conn.js_api(f"STREAM.CREATE.{STREAM}", {"name": STREAM, "subjects": [SUBJECT], "storage": "file"})


def measure(url: str, rows: int, size: int, server: ServerProcess | None) -> str:
    """Publish `rows` rows once into a fresh stream; a line with rows/s and CPU per row."""
    fresh_stream(url)
    batches = arrow_batches(rows, size)
    options = WriteOptions.from_options({"servers": url, "subject": SUBJECT})
    columns = WriteColumns(data="data", data_is_string=False)
    server_cpu = cpu_seconds(server) if server is not None else 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    msg = publish_batches(options, columns, iter(batches), "w", 0)
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    if msg.published != rows:
        raise RuntimeError(f"{msg.published} of {rows} rows stored ({msg.duplicates} duplicates)")
    line = f"{rows} rows in {wall:.2f}s ({rows / wall:,.0f}/s): client {cpu / rows * 1e6:.2f} us/row"
    if server is not None:
        line += f", server {(cpu_seconds(server) - server_cpu) / rows * 1e6:.2f} us/row"
    return line


@contextlib.contextmanager
def _server(kind: str) -> Iterator[ServerProcess]:
    with tempfile.TemporaryDirectory(prefix="sink-cpu-") as root, running(kind, Path(root)) as proc:
        yield proc


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=1, help="runs per server")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--server", choices=(*KINDS, "both"), default="both")
    target.add_argument("--url", help="a running server instead of starting one")
    args = parser.parse_args(argv)
    if args.url:
        for _ in range(args.repeat):
            print(f"{args.url}: {measure(args.url, args.rows, args.size, None)}")
        return
    for kind in KINDS if args.server == "both" else (args.server,):
        with _server(kind) as proc:
            for _ in range(args.repeat):
                print(f"{kind}: {measure(proc.url, args.rows, args.size, proc)}")


if __name__ == "__main__":
    main()
