"""The writers' constructors (write/batch_writer.py, write/stream_writer.py): options and
columns checked, nothing asked of the server. Spark builds a stream writer again on the
driver for every micro-batch's commit: a constructor that connected would make a server
hiccup fail the query, and would cost a round trip per batch."""

from __future__ import annotations

import time

import pytest
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from spark_jetstream.options import OptionError
from spark_jetstream.write.batch_writer import JetStreamBatchWriter
from spark_jetstream.write.schema import SchemaError
from spark_jetstream.write.stream_writer import JetStreamStreamWriter

SCHEMA = StructType([StructField("data", BinaryType()), StructField("subject", StringType())])
NOWHERE = {"servers": "nats://127.0.0.1:1", "stream": "S", "connectTimeout": "5", "retryTimeout": "30s"}


@pytest.mark.parametrize("writer", [JetStreamStreamWriter, JetStreamBatchWriter])
def test_constructors_do_no_io(writer: type) -> None:
    started = time.monotonic()
    built = writer(NOWHERE, SCHEMA, False)  # no server listens there: any connect would fail
    assert time.monotonic() - started < 1.0
    assert built.columns.subject == "subject" and built.options.stream == "S"


@pytest.mark.parametrize("writer", [JetStreamStreamWriter, JetStreamBatchWriter])
def test_constructors_check_options_and_columns(writer: type) -> None:
    with pytest.raises(OptionError, match="unknown option 'bogus'"):
        writer({**NOWHERE, "bogus": "1"}, SCHEMA, False)
    with pytest.raises(SchemaError, match="msgIdColumns names column 'key'"):
        writer({**NOWHERE, "msgIdColumns": "key"}, SCHEMA, False)
