"""The two streaming queries of the orders pipeline, and reading back what they wrote.

- `routed` reads ORDERS, parses and validates, and writes every row once:
  valid rows as the cleaned copy to ORDERS_CLEAN, bad rows to ORDERS_DLQ
  (`transforms.routed_output`, one pass, deterministic message ids);
- `revenue` reads ORDERS, keeps valid enriched rows, aggregates per event-time
  window and region behind a watermark (append mode: a window is written once,
  when the watermark passes its end) and writes to ORDERS_REVENUE.

Each query has its own checkpoint (the source of truth for its progress) and
its own durable consumer that mirrors it on the server, and observes its
counts (`input`, `valid`, `dead_letter`; `windows`) for the progress lines.
Each payload is parsed once per query: the observation of the validated rows
sits between the parse and any filter (see `_observed_validation`);
`routed_frame` / `revenue_frame` build the queries' DataFrames, so that tests
check that on a batch read.
Exactly-once: the checkpoint replays a failed batch over the same sequence
range and the sink republishes the same message ids, which the streams'
dedup window drops.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from jobs.orders import streams, transforms
from jobs.orders.expected import WindowFigures
from spark_jetstream.read.lag import offset_seqs


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    servers: str
    checkpoint_dir: Path
    max_per_batch: int = 100_000
    window_minutes: int = 5
    watermark_minutes: int = 2
    processing_time: str | None = None  # None: Trigger.AvailableNow

    @property
    def window_ms(self) -> int:
        return self.window_minutes * 60_000


def _source(spark: SparkSession, cfg: PipelineConfig, durable: str) -> DataFrame:
    return (
        spark.readStream.format("jetstream")
        .option("servers", cfg.servers)
        .option("stream", streams.INPUT)
        .option("durable", durable)
        .option("startingOffsets", "earliest")
        .option("maxMessagesPerTrigger", str(cfg.max_per_batch))
        # The queries read subject and payload only: no per-message headers map to build.
        .option("includeHeaders", "false")
        .load()
    )


def _start(df: DataFrame, cfg: PipelineConfig, name: str) -> StreamingQuery:
    writer = (
        df.writeStream.format("jetstream")
        .queryName(name)
        .option("servers", cfg.servers)
        .option("checkpointLocation", str(cfg.checkpoint_dir / name))
        .outputMode("append")
    )
    if cfg.processing_time is None:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=cfg.processing_time)
    return writer.start()


def _observed_validation(validated: DataFrame, name: str) -> DataFrame:
    """`validated` with its counts observed as `name` (`input`, `valid`, `dead_letter`).

    The observation is also what keeps each payload parsed once: Spark never pushes a
    filter below an observation (that would change what it counts), so the revenue
    query's `where(error is null)` stays above it. Pushed below the parse instead, the
    filter inlines `from_json` once per field it tests: 15 parses of every payload,
    which made the revenue query 2.2x dearer in JVM time (docs/main-job.md).
    """
    return validated.observe(
        name,
        F.count(F.lit(1)).alias("input"),
        F.count(F.when(F.col("error").isNull(), 1)).alias("valid"),
        F.count(F.when(F.col("error").isNotNull(), 1)).alias("dead_letter"),
    )


def routed_frame(source: DataFrame) -> DataFrame:
    """The `routed` query's sink rows from a `jetstream` read (streaming, or batch in tests)."""
    validated = transforms.validate(transforms.parse_orders(source))
    return transforms.routed_output(_observed_validation(validated, "routed"))


def revenue_frame(source: DataFrame, cfg: PipelineConfig) -> DataFrame:
    """The `revenue` query's sink rows from a `jetstream` read (streaming, or batch in tests)."""
    validated = transforms.validate(transforms.parse_orders(source))
    enriched = transforms.enrich(_observed_validation(validated, "revenue_input"))
    windows = transforms.windowed_revenue(
        enriched, window=f"{cfg.window_minutes} minutes", watermark=f"{cfg.watermark_minutes} minutes"
    )
    return transforms.revenue_output(windows).observe("revenue", F.count(F.lit(1)).alias("windows"))


def start_routed(spark: SparkSession, cfg: PipelineConfig) -> StreamingQuery:
    return _start(routed_frame(_source(spark, cfg, "orders-pipeline-routed")), cfg, "routed")


def start_revenue(spark: SparkSession, cfg: PipelineConfig) -> StreamingQuery:
    return _start(revenue_frame(_source(spark, cfg, "orders-pipeline-revenue"), cfg), cfg, "revenue")


@dataclass(frozen=True, slots=True)
class CheckpointState:
    batch_id: int
    end_seq: int  # the source offset of the last committed batch
    watermark_ms: int  # the event-time watermark that batch ran with


def checkpoint_state(checkpoint: Path) -> CheckpointState | None:
    """What the query's checkpoint says about its last committed batch (None before the first).

    Spark's offset log `offsets/<batch>` holds a version line, the batch
    metadata (with `batchWatermarkMs`) and one line per source offset;
    `commits/<batch>` exists once that batch completed.
    """
    commits = checkpoint / "commits"
    done = sorted((int(p.name) for p in commits.glob("[0-9]*") if p.name.isdigit()), reverse=True)
    for batch in done:
        path = checkpoint / "offsets" / str(batch)
        if not path.exists():
            continue
        lines = path.read_text().splitlines()
        if len(lines) < 3:
            continue
        meta: dict[str, Any] = json.loads(lines[1])
        offset: dict[str, Any] = json.loads(lines[2])
        return CheckpointState(batch, sum(offset_seqs(offset).values()), int(meta.get("batchWatermarkMs", 0)))
    return None


def read_windows(spark: SparkSession, servers: str) -> tuple[int, dict[tuple[int, str], WindowFigures]]:
    """(messages, figures per (window start ms, region)) stored in ORDERS_REVENUE (batch read)."""
    from datetime import datetime

    rows = (
        spark.read.format("jetstream")
        .option("servers", servers)
        .option("stream", streams.REVENUE)
        .load()
        .select(F.from_json(F.col("data").cast("string"), transforms.REVENUE_SCHEMA).alias("w"))
        .select("w.*")
        .collect()
    )
    out: dict[tuple[int, str], WindowFigures] = {}
    for r in rows:
        start = int(datetime.fromisoformat(r.window_start.replace("Z", "+00:00")).timestamp() * 1000)
        out[(start, r.region)] = WindowFigures(r.created, r.paid, r.shipped, r.revenue_eur)
    return len(rows), out
