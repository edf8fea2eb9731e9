"""Runnable jobs: one module per job, each with `main(argv) -> int`.

Jobs hold wiring only (start a server, build a Spark session, connect the
pieces); the logic lives in `jetstream_server` and `spark_jetstream`.
"""
