"""Routes of clustered JetStream, answered as a single nats-server answers them.

A nats-server without clustering still serves the subjects of leader step-down,
peer removal and evacuation and move cancelling, and refuses each with 503 10010
`JetStream clustering support required` (before it reads the body or looks up
the stream): so does this server, which is never clustered.
"""

from __future__ import annotations

from typing import Any

from jetstream_server.jetstream.api.host import ApiHost
from jetstream_server.jetstream.api.request import ApiRequest
from jetstream_server.jetstream.errors import ApiError, Err


def cluster_required(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    raise ApiError(Err.CLUSTER_REQUIRED)
