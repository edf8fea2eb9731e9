"""What the running PySpark offers the connector, detected once per process.

The Python Data Source API grew with each release (docs/spark-versions.md):
- 4.0: `DataSource`, the batch reader and writer (`DataSourceArrowWriter`),
  the stream reader with `latestOffset()` taking no arguments, the row-based
  `DataSourceStreamWriter`, and the lookup that registers any installed
  `pyspark_*` module's `DefaultSource`;
- 4.1: `DataSourceStreamArrowWriter`, and `DataSourceReader.pushFilters`
  (filter pushdown, off unless `spark.sql.python.filterPushdown.enabled`);
- 4.2: `pyspark.sql.streaming.datasource`: read limits,
  `SupportsTriggerAvailableNow`, `latestOffset(start, limit)`.

Detected by what the modules hold, not by the version number (a vendor's
build may carry a feature early); the version only names the Spark in
messages. `api_level` is the release whose API the running one offers, for
the options that need a release (options/table.py, `Option.spark`). The
data source picks its reader and writer classes from these flags
(datasource.py); tests pass their own `SparkFeatures` to drive the paths of
older releases on a newer Spark.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class SparkFeatures:
    """The parts of the Python Data Source API the running PySpark has."""

    version: str
    read_limits: bool  # 4.2: pyspark.sql.streaming.datasource, latestOffset(start, limit)
    stream_arrow_writer: bool  # 4.1: DataSourceStreamArrowWriter
    filter_pushdown: bool  # 4.1: DataSourceReader.pushFilters

    @property
    def api_level(self) -> tuple[int, int]:
        """The release whose Python Data Source API this one offers: (4, 0), (4, 1) or (4, 2)."""
        if self.read_limits:
            return (4, 2)
        if self.stream_arrow_writer or self.filter_pushdown:
            return (4, 1)
        return (4, 0)

    def lacking(self) -> list[str]:
        """What this Spark cannot do that a newer one can (for the one warning per query)."""
        missing = []
        if not self.read_limits:
            missing.append("streaming read limits and SupportsTriggerAvailableNow (Spark 4.2)")
        if not self.stream_arrow_writer:
            missing.append("the Arrow stream writer: the stream sink converts rows (Spark 4.1)")
        if not self.filter_pushdown:
            missing.append("filter pushdown (Spark 4.1)")
        return missing


@cache
def detect() -> SparkFeatures:
    """The features of the PySpark this process imports."""
    import pyspark
    from pyspark.sql import datasource

    return SparkFeatures(
        version=str(pyspark.__version__),
        read_limits=importlib.util.find_spec("pyspark.sql.streaming.datasource") is not None,
        stream_arrow_writer=hasattr(datasource, "DataSourceStreamArrowWriter"),
        filter_pushdown=hasattr(datasource.DataSourceReader, "pushFilters"),
    )
