"""Small helpers for JetStream integration tests: raw API requests and publishes.

Raw requests (not nats-py's JetStream wrappers) so that tests assert on exactly
what the server answered: envelope, error codes, field shapes.
"""

from __future__ import annotations

import json
from typing import Any

from nats.aio.client import Client as NATS

API = "$JS.API."


async def api(nc: NATS, suffix: str, body: Any = b"", timeout: float = 5.0) -> dict[str, Any]:
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await nc.request(API + suffix, payload, timeout=timeout)
    return json.loads(msg.data)


async def create(nc: NATS, **config: Any) -> dict[str, Any]:
    config.setdefault("name", "S")
    config.setdefault("subjects", ["s.>"])
    resp = await api(nc, f"STREAM.CREATE.{config['name']}", config)
    assert "error" not in resp, resp
    return resp


async def pub(
    nc: NATS, subject: str, data: bytes = b"x", headers: dict[str, str] | None = None
) -> dict[str, Any]:
    msg = await nc.request(subject, data, timeout=5, headers=headers)
    return json.loads(msg.data)


async def info(nc: NATS, name: str = "S", **body: Any) -> dict[str, Any]:
    return await api(nc, f"STREAM.INFO.{name}", body)


def err(resp: dict[str, Any]) -> tuple[int, int, str]:
    e = resp["error"]
    return e["code"], e["err_code"], e["description"]
