"""`$JS.API.INFO`: account usage, limits and the API level.

The answer mirrors nats-server's `account_info_response`: memory and storage
in bytes, stream and consumer counts, `limits` (-1 = unlimited; the server's
max_memory_store/max_file_store), `api` {level, total, errors}.
"""

from __future__ import annotations

from typing import Any

from jetstream_server.jetstream import reports
from jetstream_server.jetstream.api.host import ApiHost
from jetstream_server.jetstream.api.request import ApiRequest
from jetstream_server.jetstream.versioning import API_LEVEL


def account_info(host: ApiHost, req: ApiRequest) -> dict[str, Any]:
    out = reports.account_info(host.store_limits)
    if host.settings.domain:
        out["domain"] = host.settings.domain
    out["api"] = {"level": API_LEVEL, "total": host.api_stats.total, "errors": host.api_stats.errors}
    return out
