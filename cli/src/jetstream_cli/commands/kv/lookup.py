"""Opening the Key-Value bucket a command names (nats-py's `KeyValue`), with one line for a
bucket that does not exist."""

from __future__ import annotations

from nats.js.errors import BucketNotFoundError
from nats.js.errors import NotFoundError as JsNotFoundError
from nats.js.kv import KeyValue

from ...errors import CliError
from ...session import Session


async def load_bucket(s: Session, bucket: str) -> KeyValue:
    try:
        return await s.nc.jetstream(timeout=s.opts.timeout).key_value(bucket)
    except (BucketNotFoundError, JsNotFoundError) as exc:
        raise CliError(f"bucket {bucket!r} not found") from exc
