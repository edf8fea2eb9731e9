"""The account's running totals (jetstream/limits.py `StoreLimits`): usage, messages
and reservations are kept as streams come, change and go and as their stores report
each write and removal, never summed over the streams; after any sequence of
operations they equal the sums a scan of every stream would give. Several seeds,
printed."""

from __future__ import annotations

import random

import pytest
from router_double import RouterDouble

from jetstream_server.core.clock import FakeClock
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.limits import StoreLimits
from jetstream_server.jetstream.settings import EngineSettings


def scanned(limits: StoreLimits) -> tuple[int, int, int, int, int]:
    """The totals as a scan of every stream computes them."""
    streams = list(limits.streams.values())

    def of(storage: str) -> list:  # type: ignore[type-arg]
        return [s for s in streams if s.config.storage == storage]

    return (
        sum(s.store.stored_bytes() for s in of("memory")),
        sum(s.store.stored_bytes() for s in of("file")),
        sum(max(s.config.max_bytes, 0) for s in of("memory")),
        sum(max(s.config.max_bytes, 0) for s in of("file")),
        sum(s.store.state().msgs for s in streams),
    )


def running(limits: StoreLimits) -> tuple[int, int, int, int, int]:
    return (limits.usage("memory"), limits.usage("file"), limits.reserved("memory"),
            limits.reserved("file"), limits.messages)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_running_totals_equal_a_scan_after_any_operations(seed: int, tmp_path: object) -> None:
    print("seed", seed)
    rnd = random.Random(seed)
    router = RouterDouble()
    engine = JetStream(EngineSettings(store_dir=str(tmp_path)), FakeClock())
    engine.start(router)

    def api(suffix: str, body: object = b"") -> dict:  # type: ignore[type-arg]
        return router.request_json("$JS.API." + suffix, body)

    names: list[str] = []
    for step in range(300):
        op = rnd.choice(["create", "pub", "pub", "pub", "pub", "delmsg", "purge", "update", "delete"])
        if op == "create" or not names:
            name = f"S{step}"
            config = {"name": name, "subjects": [f"{name}.>"], "storage": rnd.choice(["memory", "file"]),
                      "max_msgs": rnd.choice([-1, 5]), "max_bytes": rnd.choice([-1, 10_000])}
            assert "error" not in api(f"STREAM.CREATE.{name}", config)
            names.append(name)
        else:
            name = rnd.choice(names)
            if op == "pub":
                router.request_json(f"{name}.{rnd.randrange(3)}", b"x" * rnd.randrange(100))
            elif op == "delmsg":
                api(f"STREAM.MSG.DELETE.{name}", {"seq": rnd.randrange(1, 20)})
            elif op == "purge":
                api(f"STREAM.PURGE.{name}", rnd.choice([{}, {"filter": f"{name}.1"}, {"keep": 2}]))
            elif op == "update":
                config = api(f"STREAM.INFO.{name}")["config"]
                config["max_bytes"] = rnd.choice([-1, 500, 20_000])
                config["max_msgs"] = rnd.choice([-1, 3])
                api(f"STREAM.UPDATE.{name}", config)
            else:
                assert api(f"STREAM.DELETE.{name}").get("success")
                names.remove(name)
        assert running(engine.store_limits) == scanned(engine.store_limits), (step, op)
    info = api("INFO")
    assert (info["memory"], info["storage"]) == running(engine.store_limits)[:2]
    engine.close()
    assert running(engine.store_limits) == (0, 0, 0, 0, 0)
