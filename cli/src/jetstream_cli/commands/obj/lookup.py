"""Opening the Object Store bucket a command names (nats-py's `ObjectStore`), with one line
for a bucket that does not exist."""

from __future__ import annotations

from nats.js.errors import BucketNotFoundError
from nats.js.errors import NotFoundError as JsNotFoundError
from nats.js.object_store import ObjectStore

from ...errors import CliError
from ...session import Session


async def load_store(s: Session, bucket: str) -> ObjectStore:
    try:
        return await s.nc.jetstream(timeout=s.opts.timeout).object_store(bucket)
    except (BucketNotFoundError, JsNotFoundError) as exc:
        raise CliError(f"object store bucket {bucket!r} not found") from exc
