"""One refresh of the dashboard's data from any NATS server, over nats-py.

The shape is the one the bundled server's monitoring port sends (docs/dashboard.md,
"The data"): streams and consumers as `$JS.API.STREAM.INFO` / `CONSUMER.INFO` answer
them, the account as `$JS.API.INFO` answers it, the server as a subset of `/varz`.

Requests per refresh (the page shows them in `cost.api_requests`):
- once per connection, `$SYS.REQ.USER.INFO` (who the user is and what it may publish);
- `$JS.API.INFO`;
- server figures: `$SYS.REQ.SERVER.PING.VARZ` (system-account users; others get no
  responders at once), else `$SYS.REQ.ACCOUNT.PING.STATZ` (the user's account); a
  server that answers neither is asked again only every `SYS_RETRY_S`;
- a page of streams: one `STREAM.LIST` (it answers up to 256 from the offset); without
  that permission `STREAM.NAMES` pages (at most `MAX_NAME_PAGES`) and one `STREAM.INFO`
  per permitted stream of the page;
- per stream of the page that has consumers: one `CONSUMER.LIST` (or `CONSUMER.NAMES`
  and one `CONSUMER.INFO` per permitted consumer shown).
So at most 4 + page size requests with the usual permissions (24 for the default page
of 20), whatever the number of streams; requests run `CONCURRENCY` at a time, each
bounded by the request timeout, the whole refresh by `REFRESH_DEADLINE_S`.

Failures never raise: a server that does not answer, a request that is refused or
times out, end as lines in `errors` (and `notes` for what this user may not see);
the connection is re-made at the next refresh after it dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final
from urllib.parse import parse_qs

from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from ..connection import ConnectionOptions, connect
from ..errors import CliError
from ..jsapi import API_PREFIX, JsonDict
from .access import Access

log = logging.getLogger(__name__)

SHAPE_VERSION: Final = 1
DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 100
CONSUMERS_PER_STREAM: Final = 10
MAX_PARAM_LEN: Final = 255
MAX_NAME_PAGES: Final = 10
CONCURRENCY: Final = 8
REQUEST_TIMEOUT_S: Final = 2.0
REFRESH_DEADLINE_S: Final = 12.0
SYS_RETRY_S: Final = 60.0
CACHE_SECONDS: Final = 1.0
CACHE_ENTRIES: Final = 64
# The consumer metadata key the connector marks its durables with (spark_jetstream's
# read/durable.py OWNER_KEY; the CLI cannot import the connector, a test checks they agree).
CONNECTOR_OWNER_KEY: Final = "spark_jetstream.owner"


class QueryError(ValueError):
    """A data.json parameter that cannot be used; `str()` names it."""


@dataclass(frozen=True, slots=True)
class Query:
    """A page of streams (`offset`, `limit`, `subject` filter), or one stream (`stream`)
    with a page of its consumers."""

    offset: int = 0
    limit: int = DEFAULT_LIMIT
    subject: str = ""
    stream: str = ""

    @classmethod
    def from_query_string(cls, query: str) -> Query:
        params = parse_qs(query, keep_blank_values=True)

        def text(key: str) -> str:
            value = params.get(key, [""])[-1]
            if len(value) > MAX_PARAM_LEN:
                raise QueryError(f"{key}: longer than {MAX_PARAM_LEN} characters")
            if any(c.isspace() for c in value):
                raise QueryError(f"{key}: must not contain white space: {value!r}")
            return value

        def number(key: str, default: int, low: int, high: int) -> int:
            raw = text(key)
            if raw == "":
                return default
            try:
                value = int(raw)
            except ValueError:
                raise QueryError(f"{key}: not a number: {raw!r}") from None
            if not low <= value <= high:
                raise QueryError(f"{key}: {value} is not between {low} and {high}")
            return value

        stream = text("stream")
        if any(c in stream for c in ".*>"):
            raise QueryError(f"stream: not a stream name: {stream!r}")
        return cls(offset=number("offset", 0, 0, 1 << 62),
                    limit=number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
                    subject=text("subject"), stream=stream)


class _Refresh:
    """The requests of one refresh: counted, `CONCURRENCY` at a time, failures as text."""

    def __init__(self, nc: Client, timeout: float) -> None:
        self.nc = nc
        self.timeout = timeout
        self.requests = 0
        self.errors: list[str] = []
        self.notes: list[str] = []
        self._slots = asyncio.Semaphore(CONCURRENCY)

    async def raw(self, subject: str, body: JsonDict | None = None) -> JsonDict:
        """One request; its JSON answer. Raises NatsError / CliError."""
        payload = b"" if body is None else json.dumps(body).encode()
        async with self._slots:
            self.requests += 1
            msg = await self.nc.request(subject, payload, timeout=self.timeout)
        try:
            answer = json.loads(msg.data) if msg.data else {}
        except ValueError:
            raise CliError(f"invalid JSON answer to {subject}") from None
        if not isinstance(answer, dict):
            raise CliError(f"invalid answer to {subject}")
        return answer

    async def api(self, subject: str, body: JsonDict | None = None) -> JsonDict | None:
        """A `$JS.API` request; None (and a line in `errors`) when it failed."""
        full = f"{API_PREFIX}.{subject}"
        try:
            answer = await self.raw(full, body)
        except NoRespondersError:
            self.errors.append(f"{full}: no responders (JetStream not enabled for this account?)")
            return None
        except NatsTimeoutError:
            self.errors.append(f"{full}: no answer within {self.timeout:g}s")
            return None
        except (NatsError, CliError) as exc:
            self.errors.append(f"{full}: {exc or type(exc).__name__}")
            return None
        error = answer.get("error")
        if isinstance(error, dict):
            self.errors.append(f"{full}: {error.get('description', 'error')} "
                               f"({error.get('err_code', error.get('code', '?'))})")
            return None
        answer.pop("type", None)
        return answer


class Collector:
    """Collects the dashboard's data with the user's own connection settings."""

    def __init__(self, opts: ConnectionOptions, *, refresh_ms: int = 3000,
                 connector: Callable[[ConnectionOptions], Awaitable[Client]] = connect) -> None:
        self.opts = opts
        self.refresh_ms = refresh_ms
        self._connect = connector
        self._nc: Client | None = None
        self._access: Access | None = None
        self._sys_unavailable_until = 0.0
        self._cache: dict[Query, tuple[float, JsonDict]] = {}
        self._running: dict[Query, asyncio.Task[JsonDict]] = {}

    @property
    def timeout(self) -> float:
        return min(self.opts.timeout, REQUEST_TIMEOUT_S)

    async def connect(self) -> None:
        """Connect now (the command fails fast on a wrong URL or credentials)."""
        await self._connection()

    async def close(self) -> None:
        for task in list(self._running.values()):
            task.cancel()
        if self._nc is not None and not self._nc.is_closed:
            await self._nc.close()
        self._nc = None

    async def snapshot(self, query: Query) -> JsonDict:
        """One refresh (the same query within `CACHE_SECONDS` shares one)."""
        cached = self._cache.get(query)
        if cached is not None and time.monotonic() - cached[0] < CACHE_SECONDS:
            return cached[1]
        task = self._running.get(query)
        if task is None:
            task = asyncio.ensure_future(self._collect(query))
            self._running[query] = task
            task.add_done_callback(lambda _t: self._running.pop(query, None))
        data = await asyncio.shield(task)
        if len(self._cache) >= CACHE_ENTRIES:
            self._cache.clear()
        self._cache[query] = (time.monotonic(), data)
        return data

    # -- one refresh -----------------------------------------------------------------------
    async def _connection(self) -> Client:
        if self._nc is None or self._nc.is_closed:
            self._nc = None
            self._access = None
            self._nc = await self._connect(self.opts)
        return self._nc

    async def _collect(self, query: Query) -> JsonDict:
        started = time.perf_counter()
        now = time.time()
        out: JsonDict = {
            "dashboard": SHAPE_VERSION,
            "source": "jetstream-cli",
            "server_url": ", ".join(self.opts.server_list()),
            "now": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="milliseconds")[:-6] + "Z",
            "now_ms": int(now * 1000),
            "refresh_ms": self.refresh_ms,
            "identity": None,
            "server": None,
            "account": None,
            "streams": {"total": 0, "offset": query.offset, "limit": query.limit,
                        "subject": query.subject, "hidden": 0, "items": []},
            "detail": query.stream or None,
            "notes": [],
            "errors": [],
        }
        requests = 0
        try:
            nc = await self._connection()
        except CliError as exc:
            out["errors"].append(f"the NATS server does not answer: {exc}")
        else:
            refresh = _Refresh(nc, self.timeout)
            try:
                await asyncio.wait_for(self._fill(refresh, query, out), REFRESH_DEADLINE_S)
            except asyncio.TimeoutError:
                refresh.errors.append(f"the refresh took longer than {REFRESH_DEADLINE_S:g}s "
                                      "and was abandoned")
            out["errors"] += refresh.errors
            out["notes"] += refresh.notes
            requests = refresh.requests
            if nc.is_closed:
                out["errors"].append("the connection to the NATS server was lost; "
                                     "reconnecting at the next refresh")
        out["cost"] = {"api_requests": requests,
                       "took_ms": round((time.perf_counter() - started) * 1000, 3)}
        return out

    async def _fill(self, refresh: _Refresh, query: Query, out: JsonDict) -> None:
        access = await self._who(refresh)
        if access.known:
            out["identity"] = {"user": access.user, "account": access.account}
        server_info: dict[str, Any] = getattr(refresh.nc, "_server_info", {}) or {}
        out["server"] = {
            "scope": None,
            "name": server_info.get("server_name") or server_info.get("server_id"),
            "id": server_info.get("server_id"),
            "version": server_info.get("version"),
        }
        account, figures, streams = await asyncio.gather(
            self._account(refresh, access),
            self._server_figures(refresh, access),
            self._streams(refresh, access, query),
        )
        out["account"] = account
        if figures is not None:
            out["server"].update(figures)
        out["streams"] = streams

    async def _who(self, refresh: _Refresh) -> Access:
        if self._access is not None:
            return self._access
        access = Access()
        try:
            answer = await refresh.raw("$SYS.REQ.USER.INFO")
            data = answer.get("data")
            if isinstance(data, dict) and not answer.get("error"):
                access = Access.from_user_info(data)
        except (NatsError, CliError) as exc:
            # the bundled server has no $SYS requests: everything is tried
            log.debug("no $SYS.REQ.USER.INFO (%s): every request is tried", exc)
        self._access = access
        return access

    async def _account(self, refresh: _Refresh, access: Access) -> JsonDict | None:
        if not access.may(f"{API_PREFIX}.INFO"):
            refresh.notes.append("This user may not read the JetStream account information "
                                 "($JS.API.INFO).")
            return None
        return await refresh.api("INFO")

    async def _server_figures(self, refresh: _Refresh, access: Access) -> JsonDict | None:
        if time.monotonic() < self._sys_unavailable_until:
            refresh.notes.append(_NO_SYS)
            return None
        for subject, convert in (("$SYS.REQ.SERVER.PING.VARZ", _from_varz),
                                 ("$SYS.REQ.ACCOUNT.PING.STATZ", _from_statz)):
            if not access.may(subject):
                continue
            try:
                answer = await refresh.raw(subject)
            except (NatsError, CliError):
                continue
            data = answer.get("data")
            figures = convert(data, access) if isinstance(data, dict) else None
            if figures is not None:
                return figures
        self._sys_unavailable_until = time.monotonic() + SYS_RETRY_S
        refresh.notes.append(_NO_SYS)
        return None

    async def _streams(self, refresh: _Refresh, access: Access, query: Query) -> JsonDict:
        page: JsonDict = {"total": 0, "offset": query.offset, "limit": query.limit,
                          "subject": query.subject, "hidden": 0, "items": []}
        if query.stream:
            page.update(offset=0, limit=1, subject="")
            if not access.may(f"{API_PREFIX}.STREAM.INFO.{query.stream}"):
                page["hidden"] = 1
                return page
            info = await refresh.api(f"STREAM.INFO.{query.stream}")
            if info is not None:
                for paging in ("total", "offset", "limit"):  # the subjects' paging
                    info.pop(paging, None)
                page.update(total=1, items=[info])
        elif access.may(f"{API_PREFIX}.STREAM.LIST"):
            body: JsonDict = {"offset": query.offset}
            if query.subject:
                body["subject"] = query.subject
            answer = await refresh.api("STREAM.LIST", body)
            if answer is not None:
                page["total"] = int(answer.get("total") or 0)
                page["items"] = list(answer.get("streams") or [])[: query.limit]
        elif access.may(f"{API_PREFIX}.STREAM.NAMES"):
            await self._streams_by_name(refresh, access, query, page)
        else:
            refresh.notes.append("This user may not list streams ($JS.API.STREAM.LIST, "
                                 "STREAM.NAMES): open one by name (#stream=NAME).")
        streams = page["items"]
        await asyncio.gather(*(
            self._consumers(refresh, access, info, query) for info in streams
        ))
        return page

    async def _streams_by_name(self, refresh: _Refresh, access: Access, query: Query,
                               page: JsonDict) -> None:
        """The page from STREAM.NAMES and one STREAM.INFO per permitted name shown."""
        names: list[str] = []
        total = 0
        for _ in range(MAX_NAME_PAGES):
            body: JsonDict = {"offset": len(names)}
            if query.subject:
                body["subject"] = query.subject
            answer = await refresh.api("STREAM.NAMES", body)
            if answer is None:
                break
            got = [str(n) for n in answer.get("streams") or []]
            names += got
            total = int(answer.get("total") or 0)
            if not got or len(names) >= total:
                break
        else:
            refresh.notes.append(f"Only the first {len(names):,} of {total:,} stream names "
                                 "were read (the user may not use STREAM.LIST).")
        permitted = [n for n in names if access.may(f"{API_PREFIX}.STREAM.INFO.{n}")]
        page["total"] = len(permitted)
        page["hidden"] = len(names) - len(permitted)
        shown = permitted[query.offset: query.offset + query.limit]
        infos = await asyncio.gather(*(refresh.api(f"STREAM.INFO.{n}") for n in shown))
        page["items"] = [i for i in infos if i is not None]

    async def _consumers(self, refresh: _Refresh, access: Access, info: JsonDict,
                         query: Query) -> None:
        name = str((info.get("config") or {}).get("name") or "")
        detail = bool(query.stream)
        offset, limit = (query.offset, query.limit) if detail else (0, CONSUMERS_PER_STREAM)
        page: JsonDict = {"total": 0, "offset": offset, "limit": limit, "hidden": 0, "items": []}
        info["consumers"] = page
        if not int((info.get("state") or {}).get("consumer_count") or 0):
            return
        if access.may(f"{API_PREFIX}.CONSUMER.LIST.{name}"):
            answer = await refresh.api(f"CONSUMER.LIST.{name}", {"offset": offset})
            if answer is None:
                return
            items = list(answer.get("consumers") or [])
            if not detail:
                items.sort(key=_connector_first)
            page.update(total=int(answer.get("total") or 0), items=items[:limit])
        elif access.may(f"{API_PREFIX}.CONSUMER.NAMES.{name}"):
            answer = await refresh.api(f"CONSUMER.NAMES.{name}", {"offset": offset})
            if answer is None:
                return
            names = [str(n) for n in answer.get("consumers") or []]
            permitted = [n for n in names if access.may(f"{API_PREFIX}.CONSUMER.INFO.{name}.{n}")]
            infos = await asyncio.gather(*(
                refresh.api(f"CONSUMER.INFO.{name}.{n}") for n in permitted[:limit]))
            page.update(total=int(answer.get("total") or 0) - (len(names) - len(permitted)),
                        hidden=len(names) - len(permitted),
                        items=[i for i in infos if i is not None])
        else:
            page["note"] = "this user may not list its consumers"


_NO_SYS: Final = ("No server statistics: the server answers neither $SYS.REQ.SERVER.PING.VARZ "
                  "(system-account users of nats-server) nor $SYS.REQ.ACCOUNT.PING.STATZ for "
                  "this user; the bundled server shows them on its own monitoring port.")


def _connector_first(consumer: JsonDict) -> tuple[bool, str]:
    metadata = (consumer.get("config") or {}).get("metadata") or {}
    return CONNECTOR_OWNER_KEY not in metadata, str(consumer.get("name") or "")


def _from_varz(data: JsonDict, _access: Access) -> JsonDict | None:
    if "connections" not in data:
        return None
    return {
        "scope": "server",
        "name": data.get("server_name") or data.get("server_id"),
        "id": data.get("server_id"),
        "version": data.get("version"),
        "start": data.get("start"),
        **{key: data.get(key) for key in ("connections", "subscriptions", "in_msgs", "out_msgs",
                                          "in_bytes", "out_bytes", "slow_consumers")},
    }


def _from_statz(data: JsonDict, access: Access) -> JsonDict | None:
    stats = [s for s in data.get("account_statz") or [] if isinstance(s, dict)]
    mine = next((s for s in stats if access.account in (s.get("acc"), None)), None)
    if mine is None:
        return None
    received = mine.get("received") or {}
    sent = mine.get("sent") or {}
    return {
        "scope": "account",
        "account": mine.get("acc"),
        "connections": mine.get("conns"),
        "subscriptions": mine.get("num_subscriptions"),
        "in_msgs": received.get("msgs"),
        "out_msgs": sent.get("msgs"),
        "in_bytes": received.get("bytes"),
        "out_bytes": sent.get("bytes"),
        "slow_consumers": mine.get("slow_consumers"),
    }
