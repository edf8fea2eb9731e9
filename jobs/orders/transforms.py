"""The pipeline's DataFrame logic: parse, validate, enrich, and shape rows for the sinks.

Every function takes and returns a DataFrame and works the same on a streaming
DataFrame (`readStream.format("jetstream")`) and on a batch one (tests build
those from generator events with `source_frame`). Input columns are the
`jetstream` read schema: `subject, data, headers, stream, seq, timestamp`.

- `parse_orders`: JSON payload -> typed columns (`ORDER_SCHEMA`), source
  coordinates kept (`source_stream`, `source_seq`, `source_subject`); one
  `from_json` per payload, which also tells whether it is a JSON object;
- `validate`: adds `error` (null when valid, else the first failing rule, in
  the words of `jobs.orders.generator.BAD_REASONS`);
- `enrich`: valid rows only; adds `event_ts`, `region_name`, `amount_eur`,
  `items_count`;
- `routed_output`: one sink row per input row in a single pass — valid rows
  become the cleaned copy (`clean.orders.<event>`, msg id
  `clean.<order_id>.<event>`), bad rows go to the dead-letter subject
  (`dlq.orders.<event>`) with the reason in a `Dlq-Reason` header and msg id
  `dlq.<stream>.<seq>`;
- `windowed_revenue`: per event-time window and region, counts of created /
  paid / shipped and the paid revenue in EUR, behind a watermark; sink rows
  with msg id `revenue.<region>.<window start>`.

Invariants: message ids depend only on the input (never on batch ids or time),
so a replayed batch publishes the same ids and the server drops the copies;
no expression can fail on bad input (try_ functions, ANSI-safe), so a bad
record becomes a dead letter instead of failing the query.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DecimalType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from jobs.orders.generator import BAD_REASONS, EVENTS, FX_FROM_EUR, REGIONS, OrderEvent

MONEY: Final = DecimalType(14, 2)
ORDER_SCHEMA: Final = StructType(
    [
        StructField("order_id", StringType()),
        StructField("event", StringType()),
        StructField("customer_id", StringType()),
        StructField("region", StringType()),
        StructField("currency", StringType()),
        StructField("amount", MONEY),
        StructField("event_time", StringType()),
        StructField(
            "items",
            ArrayType(
                StructType(
                    [
                        StructField("sku", StringType()),
                        StructField("qty", IntegerType()),
                        StructField("unit_price", MONEY),
                    ]
                )
            ),
        ),
    ]
)
# from_json puts the text of a payload it cannot read as an object here (PERMISSIVE mode).
CORRUPT_RECORD: Final = "_corrupt_record"
PARSE_SCHEMA: Final = StructType([*ORDER_SCHEMA.fields, StructField(CORRUPT_RECORD, StringType())])
REQUIRED_FIELDS: Final = ("order_id", "event", "customer_id", "region", "currency", "amount", "event_time")
REGION_NAMES: Final[dict[str, str]] = {
    "eu-west": "Europe (West)",
    "us-east": "US East",
    "us-west": "US West",
    "ap-south": "Asia Pacific (South)",
}
CLEAN_PREFIX: Final = "clean"
DLQ_PREFIX: Final = "dlq"
REVENUE_PREFIX: Final = "revenue"

assert set(REGION_NAMES) == set(REGIONS)


def _literal_map(values: dict[str, object]) -> Column:
    pairs: list[Column] = []
    for key, value in values.items():
        pairs += [F.lit(key), F.lit(value)]
    return F.create_map(*pairs)


def parse_orders(source: DataFrame) -> DataFrame:
    """Typed order columns from the JSON payload; `json_ok` false when it is no JSON object.

    One parse per payload (`from_json`, PERMISSIVE): a payload that it cannot
    read whole as an order object comes back as a null struct or with its text
    in `CORRUPT_RECORD`, and is not `json_ok`. That covers what is no JSON
    object (malformed, truncated, an array, a scalar, empty) and also an object
    with a field of the wrong type (e.g. a string amount), which a syntactic
    check would have called an object with that field missing. (Fields parsed
    before the error may be filled: a payload cut inside `items` keeps the
    fields before it, so only `CORRUPT_RECORD` tells it apart.)
    """
    text = F.col("data").cast("string")
    order = F.from_json(text, PARSE_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD})
    return (
        source.select(
            F.col("stream").alias("source_stream"),
            F.col("seq").alias("source_seq"),
            F.col("subject").alias("source_subject"),
            F.col("data").alias("payload"),
            order.alias("order"),
        )
        .select(
            "source_stream",
            "source_seq",
            "source_subject",
            "payload",
            (F.col("order").isNotNull() & F.col(f"order.{CORRUPT_RECORD}").isNull()).alias("json_ok"),
            *(F.col(f"order.{f.name}").alias(f.name) for f in ORDER_SCHEMA),
        )
    )


def validate(parsed: DataFrame) -> DataFrame:
    """Adds `error`: null for a valid order event, else the reason (first failing rule)."""
    event_ts = F.try_to_timestamp(F.col("event_time"))
    subject_event = F.substring_index(F.col("source_subject"), ".", -1)
    rule = F.when(~F.col("json_ok"), F.lit(BAD_REASONS["not_json"]))
    for name in REQUIRED_FIELDS:
        rule = rule.when(F.col(name).isNull(), F.lit(f"missing field {name}"))
    rule = (
        rule.when(F.col("amount") <= 0, F.lit(BAD_REASONS["negative_amount"]))
        .when(~F.col("region").isin(*REGIONS), F.lit(BAD_REASONS["unknown_region"]))
        .when(~F.col("currency").isin(*FX_FROM_EUR), F.lit("unknown currency"))
        .when(~F.col("event").isin(*EVENTS), F.lit("unknown event"))
        .when(event_ts.isNull(), F.lit(BAD_REASONS["bad_timestamp"]))
        .when(F.col("event") != subject_event, F.lit(BAD_REASONS["subject_mismatch"]))
    )
    return parsed.withColumn("error", rule).withColumn("event_ts", event_ts)


def enrich(validated: DataFrame) -> DataFrame:
    """Valid rows with `region_name`, `amount_eur` (exact decimal), `items_count`."""
    fx = _literal_map({k: float(v) for k, v in FX_FROM_EUR.items()})
    amount_eur = F.round(F.col("amount").cast("double") / fx[F.col("currency")], 2).cast(MONEY)
    return (
        validated.where(F.col("error").isNull())
        .withColumn("region_name", _literal_map(dict(REGION_NAMES))[F.col("region")])
        .withColumn("amount_eur", amount_eur)
        .withColumn("items_count", F.coalesce(F.aggregate("items", F.lit(0), lambda acc, it: acc + it["qty"]), F.lit(0)))
    )


def routed_output(validated: DataFrame) -> DataFrame:
    """Sink rows (`subject, data, headers, msg_id`) for every validated row: clean copy or dead letter."""
    valid = F.col("error").isNull()
    region_name = _literal_map(dict(REGION_NAMES))[F.col("region")]
    fx = _literal_map({k: float(v) for k, v in FX_FROM_EUR.items()})
    clean_json = F.to_json(
        F.struct(
            "order_id",
            "event",
            "customer_id",
            "region",
            region_name.alias("region_name"),
            "currency",
            "amount",
            F.round(F.col("amount").cast("double") / fx[F.col("currency")], 2).cast(MONEY).alias("amount_eur"),
            F.date_format("event_ts", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias("event_time"),
            F.coalesce(F.aggregate("items", F.lit(0), lambda acc, it: acc + it["qty"]), F.lit(0)).alias("items_count"),
            "source_seq",
        )
    )
    seq_text = F.col("source_seq").cast("string")
    return validated.select(
        F.when(valid, F.concat(F.lit(f"{CLEAN_PREFIX}."), F.col("source_subject")))
        .otherwise(F.concat(F.lit(f"{DLQ_PREFIX}."), F.col("source_subject")))
        .alias("subject"),
        F.when(valid, clean_json.cast("binary")).otherwise(F.col("payload")).alias("data"),
        F.when(
            valid,
            F.create_map(F.lit("Order-Id"), F.col("order_id"), F.lit("Source-Seq"), seq_text),
        )
        .otherwise(
            F.create_map(
                F.lit("Dlq-Reason"),
                F.col("error"),
                F.lit("Source-Stream"),
                F.col("source_stream"),
                F.lit("Source-Seq"),
                seq_text,
            )
        )
        .alias("headers"),
        F.when(valid, F.concat_ws(".", F.lit(CLEAN_PREFIX), F.col("order_id"), F.col("event")))
        .otherwise(F.concat_ws(".", F.lit(DLQ_PREFIX), F.col("source_stream"), seq_text))
        .alias("msg_id"),
    )


def windowed_revenue(enriched: DataFrame, window: str = "5 minutes", watermark: str = "2 minutes") -> DataFrame:
    """Per (event-time window, region): counts per event and paid revenue in EUR (typed columns)."""
    return (
        enriched.withWatermark("event_ts", watermark)
        .groupBy(F.window("event_ts", window).alias("window"), F.col("region"))
        .agg(
            F.count(F.when(F.col("event") == "created", True)).alias("created"),
            F.count(F.when(F.col("event") == "paid", True)).alias("paid"),
            F.count(F.when(F.col("event") == "shipped", True)).alias("shipped"),
            F.coalesce(F.sum(F.when(F.col("event") == "paid", F.col("amount_eur"))), F.lit(0).cast(MONEY))
            .cast(MONEY)
            .alias("revenue_eur"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "region",
            "created",
            "paid",
            "shipped",
            "revenue_eur",
        )
    )


def revenue_output(windows: DataFrame) -> DataFrame:
    """Sink rows for `windowed_revenue` rows: subject `revenue.orders.<region>`, JSON data."""
    start_text = F.date_format("window_start", "yyyy-MM-dd'T'HH:mm:ss'Z'")
    end_text = F.date_format("window_end", "yyyy-MM-dd'T'HH:mm:ss'Z'")
    return windows.select(
        F.concat(F.lit(f"{REVENUE_PREFIX}.orders."), F.col("region")).alias("subject"),
        F.to_json(
            F.struct(
                start_text.alias("window_start"),
                end_text.alias("window_end"),
                "region",
                "created",
                "paid",
                "shipped",
                "revenue_eur",
            )
        )
        .cast("binary")
        .alias("data"),
        F.concat_ws(".", F.lit(REVENUE_PREFIX), F.col("region"), start_text).alias("msg_id"),
    )


REVENUE_SCHEMA: Final = StructType(
    [
        StructField("window_start", StringType()),
        StructField("window_end", StringType()),
        StructField("region", StringType()),
        StructField("created", IntegerType()),
        StructField("paid", IntegerType()),
        StructField("shipped", IntegerType()),
        StructField("revenue_eur", MONEY),
    ]
)


def source_frame(spark: Any, events: Iterable[OrderEvent], stream: str = "ORDERS") -> DataFrame:
    """A batch DataFrame in the `jetstream` read schema holding `events` (generator events) at seq 1..n."""
    from datetime import datetime, timezone

    from spark_jetstream.read.arrow_rows import read_schema

    rows = [
        (e.subject, e.data, {k: [v] for k, v in e.headers.items()}, stream, seq,
         datetime.fromtimestamp(e.event_time_ms / 1000, tz=timezone.utc))
        for seq, e in enumerate(events, 1)
    ]
    return spark.createDataFrame(rows, read_schema(True))  # type: ignore[no-any-return]
