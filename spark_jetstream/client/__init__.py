"""The lean, blocking NATS client the connector's executors (and driver) use.

- `connection`: the connection, requests, the JetStream API (every subject
  built in one place, `LeanConnection.api_subject`, from the `domain` /
  `apiPrefix` options).
- `frames`: the protocol frames and header blocks (pure parsing).
- `msg_runs`: delivered messages kept as raw frames for bulk parsing.
- `pool`: one connection per process and server list, reused across tasks;
  `connect(options)` is how the connector gets a connection.
- `retry`: backoff within a total time budget; what is worth retrying.
- `auth`: the CONNECT credentials (user/password, token, .creds, NKey seed,
  user JWT) and the TLS context; files found locally or among Spark's files.
- `errors`: the exception family and the server's codes (`ErrorCode`,
  `Status`) as named constants.

Imports nothing of pyspark or pyarrow, nor of the read and write packages;
only the connection options from `spark_jetstream.options`.
"""

from spark_jetstream.client.connection import LeanConnection
from spark_jetstream.client.errors import (
    ConnectionLostError,
    ErrorCode,
    JetStreamApiError,
    JetStreamUnavailableError,
    NatsError,
    NatsTimeoutError,
    NoRespondersError,
    ReadInterruptedError,
    ServerError,
    Status,
)
from spark_jetstream.client.pool import connect, lease

__all__ = [
    "ConnectionLostError",
    "ErrorCode",
    "JetStreamApiError",
    "JetStreamUnavailableError",
    "LeanConnection",
    "NatsError",
    "NatsTimeoutError",
    "NoRespondersError",
    "ReadInterruptedError",
    "ServerError",
    "Status",
    "connect",
    "lease",
]
