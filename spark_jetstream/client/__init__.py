"""The lean, blocking NATS client the connector's executors (and driver) use.

- `lean_client`: the connection, frame parsing, requests, the JetStream API
  and the range fetch of the read path.
- `errors`: the exception family and the server's codes (`ErrorCode`,
  `Status`) as named constants.

Imports nothing of pyspark or pyarrow, nor of the read and write packages;
only the connection options from `spark_jetstream.options`.
"""

from spark_jetstream.client.errors import (
    ErrorCode,
    JetStreamApiError,
    NatsError,
    NatsTimeoutError,
    NoRespondersError,
    Status,
)
from spark_jetstream.client.lean_client import LeanConnection

__all__ = [
    "ErrorCode",
    "JetStreamApiError",
    "LeanConnection",
    "NatsError",
    "NatsTimeoutError",
    "NoRespondersError",
    "Status",
]
