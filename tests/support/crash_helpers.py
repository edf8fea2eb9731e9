"""Helpers of the exactly-once crash tests (test_exactly_once_crash.py,
test_exactly_once_shuffle_crash.py): the output count, the printed seed of the kill
points, the input and output streams, and the crash pipeline as a child process
(tests/support/crash_pipeline.py) that a test kills with its whole process group."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

from child_process import start_spark_child
from sink_helpers import create_stream, publish_acked, stream_info

PIPELINE = Path(__file__).resolve().parent / "crash_pipeline.py"


def out_count(url: str) -> int:
    return int(stream_info(url, "OUT")["state"]["messages"])


def seed() -> int:
    value = int(os.environ.get("CRASH_SEED", "0")) or random.randrange(1, 2**31)
    print(f"CRASH_SEED={value}")
    return value


def prepare_streams(url: str, n: int) -> None:
    """Stream IN with `n` messages `msg-<i>` on subjects `in.<i % 7>`; stream OUT (a 10-minute
    duplicate window) for the pipeline's output on `out.>`."""
    create_stream(url, "IN", ["in.>"])
    create_stream(url, "OUT", ["out.>"], duplicate_window=600 * 10**9)
    publish_acked(url, [(f"in.{i % 7}", f"msg-{i}".encode()) for i in range(n)])
    assert int(stream_info(url, "IN")["state"]["messages"]) == n


def start_child(
    url: str, checkpoint: Path, log: Path, variant: str = "narrow", *settings: str
) -> subprocess.Popen[bytes]:
    argv = [sys.executable, str(PIPELINE), variant, url, str(checkpoint), "IN", "out.copy"]
    return start_spark_child([*argv, *settings], log)
