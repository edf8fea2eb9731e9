"""JetStream API requests (`$JS.API.*`) over a nats-py connection, as plain JSON.

Answers are returned as the server sent them (dicts, minus the `type` field), so that
`--json` prints what the server said and the commands format the rest. An error answer
raises `ApiError`; no responders (JetStream not enabled, or no server behind the subject)
and time-outs raise `CliError` naming the request. Lists are paged with `offset` until
`total` is reached.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from .errors import ApiError, CliError

API_PREFIX = "$JS.API"

JsonDict = dict[str, Any]


class JetStreamApi:
    def __init__(self, nc: Client, timeout: float, prefix: str = API_PREFIX) -> None:
        self.nc = nc
        self.timeout = timeout
        self.prefix = prefix

    async def request(self, subject: str, body: JsonDict | None = None) -> JsonDict:
        """One API request; `subject` is relative to the prefix (`STREAM.INFO.ORDERS`)."""
        full = f"{self.prefix}.{subject}"
        payload = b"" if body is None else json.dumps(body).encode()
        try:
            msg = await self.nc.request(full, payload, timeout=self.timeout)
        except NoRespondersError as exc:
            raise CliError(
                f"no responders for {full}: JetStream is not enabled on this server or account"
            ) from exc
        except NatsTimeoutError as exc:
            raise CliError(f"no answer to {full} within {self.timeout:g}s") from exc
        try:
            answer = json.loads(msg.data) if msg.data else {}
        except ValueError as exc:
            raise CliError(f"invalid JSON answer to {full}: {msg.data[:200]!r}") from exc
        if not isinstance(answer, dict):
            raise CliError(f"invalid answer to {full}: {msg.data[:200]!r}")
        error = answer.get("error")
        if isinstance(error, dict):
            raise ApiError(
                int(error.get("code", 0)), int(error.get("err_code", 0)),
                str(error.get("description", "unknown error")),
            )
        answer.pop("type", None)
        return answer

    async def _paged(self, subject: str, key: str, body: JsonDict | None = None
                     ) -> AsyncIterator[Any]:
        offset = 0
        while True:
            answer = await self.request(subject, {**(body or {}), "offset": offset})
            items = answer.get(key) or []
            for item in items:
                yield item
            offset += len(items)
            if not items or offset >= int(answer.get("total", 0)):
                return

    # -- account -----------------------------------------------------------
    async def account_info(self) -> JsonDict:
        return await self.request("INFO")

    # -- streams -----------------------------------------------------------
    async def stream_names(self, subject: str | None = None) -> list[str]:
        body = {"subject": subject} if subject else None
        return [str(n) async for n in self._paged("STREAM.NAMES", "streams", body)]

    async def stream_list(self, subject: str | None = None) -> list[JsonDict]:
        body = {"subject": subject} if subject else None
        return [s async for s in self._paged("STREAM.LIST", "streams", body)]

    async def stream_info(self, name: str, body: JsonDict | None = None) -> JsonDict:
        answer = await self.request(f"STREAM.INFO.{name}", body)
        for paging in ("total", "offset", "limit"):  # the subjects paging, not stream info
            answer.pop(paging, None)
        return answer

    async def stream_create(self, config: JsonDict) -> JsonDict:
        return await self.request(f"STREAM.CREATE.{config['name']}", config)

    async def stream_update(self, config: JsonDict) -> JsonDict:
        return await self.request(f"STREAM.UPDATE.{config['name']}", config)

    async def stream_delete(self, name: str) -> JsonDict:
        return await self.request(f"STREAM.DELETE.{name}")

    async def stream_purge(self, name: str, body: JsonDict | None) -> JsonDict:
        return await self.request(f"STREAM.PURGE.{name}", body)

    async def msg_get(self, stream: str, body: JsonDict) -> JsonDict:
        answer = await self.request(f"STREAM.MSG.GET.{stream}", body)
        message = answer.get("message")
        if not isinstance(message, dict):
            raise CliError(f"invalid message answer from stream {stream}")
        return message

    async def msg_delete(self, stream: str, seq: int) -> JsonDict:
        return await self.request(f"STREAM.MSG.DELETE.{stream}", {"seq": seq})

    # -- consumers ---------------------------------------------------------
    async def consumer_names(self, stream: str) -> list[str]:
        return [str(n) async for n in self._paged(f"CONSUMER.NAMES.{stream}", "consumers")]

    async def consumer_list(self, stream: str) -> list[JsonDict]:
        return [c async for c in self._paged(f"CONSUMER.LIST.{stream}", "consumers")]

    async def consumer_info(self, stream: str, name: str) -> JsonDict:
        return await self.request(f"CONSUMER.INFO.{stream}.{name}")

    async def consumer_create(self, stream: str, config: JsonDict, action: str = "") -> JsonDict:
        name = config.get("durable_name") or config.get("name")
        subject = f"CONSUMER.CREATE.{stream}.{name}" if name else f"CONSUMER.CREATE.{stream}"
        body: JsonDict = {"stream_name": stream, "config": config}
        if action:
            body["action"] = action
        return await self.request(subject, body)

    async def consumer_delete(self, stream: str, name: str) -> JsonDict:
        return await self.request(f"CONSUMER.DELETE.{stream}.{name}")
