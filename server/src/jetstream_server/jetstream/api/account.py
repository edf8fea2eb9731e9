"""`$JS.API.INFO`: account usage, limits and the API level.

The answer mirrors nats-server's `account_info_response`: memory and storage
in bytes, stream and consumer counts, `limits` (-1 = unlimited; the server's
max_memory_store/max_file_store), `api` {level, total, errors}.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jetstream_server.jetstream.api.registry import ApiRequest, api_handler

if TYPE_CHECKING:
    from jetstream_server.jetstream.engine import JetStream

# ADR-44 API level this server implements (2.12 feature set: per-message TTL,
# direct-get batches); advertised in INFO and consumed by clients.
API_LEVEL = 2


@api_handler("INFO", "account_info")
def account_info(engine: JetStream, req: ApiRequest) -> dict[str, Any]:
    out = engine.account_info()
    if engine.domain:
        out["domain"] = engine.domain
    out["api"] = {"level": API_LEVEL, "total": engine.api_total, "errors": engine.api_errors}
    return out
