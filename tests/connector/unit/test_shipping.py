"""What Spark sends to executors unpickles there before the connector is
imported: readers, writers, partitions and the data source pickle as a call to
`shipping.load_shipped`, which pyspark's cloudpickle carries by value (the
executor side, with the connector only in a `--py-files` archive, is
tests/connector/integration/test_spark_standalone.py)."""

from __future__ import annotations

import io
import pickle
import pickletools

import pytest
from pyspark import cloudpickle
from pyspark.sql.types import BinaryType, StructField, StructType

from spark_jetstream.datasource import JetStreamDataSource
from spark_jetstream.read.partitions import SeqRangePartition
from spark_jetstream.shipping import load_shipped

READ = {"servers": "nats://127.0.0.1:4222", "stream": "IN"}
WRITE = {"servers": "nats://127.0.0.1:4222", "subject": "out.x"}
ROWS = StructType([StructField("data", BinaryType())])


def _shipped_objects() -> dict[str, object]:
    source, sink = JetStreamDataSource(READ), JetStreamDataSource(WRITE)
    return {
        "data source": source,
        "batch reader": source.reader(source.schema()),
        "stream reader": source.streamReader(source.schema()),
        "partition": SeqRangePartition(0, "IN", 1, 10, ()),
        "batch writer": sink.writer(ROWS, False),
        "stream writer": sink.streamWriter(ROWS, False),
    }


@pytest.mark.parametrize("name", list(_shipped_objects()))
def test_the_loader_comes_first_and_by_value(name: str) -> None:
    text = io.StringIO()
    pickletools.dis(cloudpickle.dumps(_shipped_objects()[name]), out=text)
    mentions = [line for line in text.getvalue().splitlines() if "spark_jetstream" in line]
    # the first mention is the loader's code (its file name), not an import of the connector
    assert mentions and mentions[0].rstrip("'").endswith("spark_jetstream/shipping.py"), mentions[:3]


@pytest.mark.parametrize("name", list(_shipped_objects()))
def test_plain_pickle_and_cloudpickle_give_back_the_same_state(name: str) -> None:
    obj = _shipped_objects()[name]
    for dumps in (pickle.dumps, cloudpickle.dumps):
        copy = pickle.loads(dumps(obj))
        assert type(copy) is type(obj)
        assert pickle.dumps(copy) == pickle.dumps(obj)  # the same state, field by field


def test_a_missing_module_outside_spark_names_the_connector() -> None:
    with pytest.raises(ModuleNotFoundError, match="spark_jetstream_absent"):
        load_shipped("spark_jetstream_absent", "Nothing")


def test_a_class_made_at_run_time_pickles_by_value() -> None:
    """A subclass built with `type()` (tests make sources that claim an older Spark's features)
    has no module path that leads to it: cloudpickle carries it whole, with its attributes."""
    made = type("JetStreamDataSource", (JetStreamDataSource,), {"marker": 7, "__qualname__": "OnNothing"})
    copy = pickle.loads(cloudpickle.dumps(made(READ)))
    assert type(copy).__qualname__ == "OnNothing" and copy.marker == 7  # type: ignore[attr-defined]
    assert copy.options == made(READ).options  # type: ignore[attr-defined]
