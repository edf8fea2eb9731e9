"""A Spark Connect server on loopback, started from the pip package of pyspark.

`ConnectServer(base_dir)` runs `spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer` (what
`sbin/start-connect-server.sh` runs, without the daemon wrapper; the
spark-connect jar ships in pyspark's `jars/`) with a local master, its gRPC
endpoint bound to 127.0.0.1 on a free port, and its Python workers on this
interpreter (which has the connector installed). `remote` is the
`sc://host:port` address for `SparkSession.builder.remote(...)`.

Invariants: `start()` returns once the gRPC port accepts connections;
`stop()` kills the server's process group (its Python workers included).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from jetstream_testing.cluster import free_port
from jetstream_testing.spark_cluster import spark_home

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServer:
    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        master: str = "local[2]",
        conf: dict[str, str] | None = None,
        startup_timeout: float = 180.0,
    ) -> None:
        self.base_dir = Path(base_dir)
        self.master = master
        self.conf = dict(conf or {})
        self.startup_timeout = startup_timeout
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.base_dir / "connect-server.log"

    @property
    def remote(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.sql.session.timeZone": "UTC",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            **self.conf,
        }
        argv = [str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", self.master]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        return argv

    def start(self) -> ConnectServer:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
        )
        with self.log_path.open("ab") as sink:
            self.proc = subprocess.Popen(
                self.argv(), env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log_path.read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"the Spark Connect server did not start:\n{tail}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.2)  # bounded by the start-up deadline

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(20)
        except ProcessLookupError:
            pass

    def __enter__(self) -> ConnectServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
