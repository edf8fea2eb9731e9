"""Replicated streams need a cluster: a single server (the bundled one, or one
nats-server without a `cluster {}` block) refuses `num_replicas > 1` with
nats-server's JSStreamReplicasNotSupportedErr, on create and on update, and
creates nothing. Both servers, same requests, same answers."""

from __future__ import annotations

import pytest
from js_helpers import api, create, err
from nats.aio.client import Client as NATS

pytestmark = pytest.mark.asyncio

NOT_CLUSTERED = (500, 10074, "replicas > 1 not supported in non-clustered mode")


@pytest.mark.parametrize("replicas", [2, 3, 5])
async def test_create_with_replicas_is_refused_and_creates_nothing(nc: NATS, replicas: int) -> None:
    resp = await api(nc, "STREAM.CREATE.R", {"name": "R", "subjects": ["r.>"], "num_replicas": replicas})
    assert err(resp) == NOT_CLUSTERED
    assert (await api(nc, "STREAM.NAMES")).get("streams") in (None, [])


async def test_update_to_replicas_is_refused_and_keeps_r1(nc: NATS) -> None:
    await create(nc)
    resp = await api(nc, "STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>"], "num_replicas": 3})
    assert err(resp) == NOT_CLUSTERED
    info = await api(nc, "STREAM.INFO.S")
    assert info["config"]["num_replicas"] == 1


async def test_one_replica_explicitly_is_fine(nc: NATS) -> None:
    resp = await api(nc, "STREAM.CREATE.R", {"name": "R", "subjects": ["r.>"], "num_replicas": 1})
    assert "error" not in resp and resp["config"]["num_replicas"] == 1
