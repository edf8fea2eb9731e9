"""A real nats-server cluster on loopback: N nodes, routes between them, JetStream on.

Each node is a `ServerProcess` of the real nats-server with its own client
port (random, learned from the log and then kept across restarts), its own
cluster (route) port, store directory and a generated config file naming
every other node's route. Only nats-server clusters: the bundled server is
single-node (it refuses `num_replicas > 1`).

Invariants:
- Route ports are chosen free before the first start and never change, so a
  node restarted after a SIGKILL finds its peers and they find it.
- `start()` returns once every node accepts clients and the JetStream meta
  group has a leader (`/jsz` of some node names one), so the first stream
  create does not race the first election.
- `stop()` stops every node that still runs; nothing is left behind.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jetstream_testing.process import ServerProcess, nats_server_binary, write_config

CLUSTER_NAME = "jsc"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def cluster_config(name: str, route_port: int, peer_ports: Sequence[int], *, host: str = "127.0.0.1") -> str:
    """The nats-server config text of one node (client port, address and store dir come as flags)."""
    routes = ", ".join(f'"nats://{host}:{p}"' for p in peer_ports)
    return (
        f'server_name: "{name}"\n'
        "jetstream {}\n"
        "cluster {\n"
        f'  name: "{CLUSTER_NAME}"\n'
        f'  listen: "{host}:{route_port}"\n'
        f"  routes: [{routes}]\n"
        "  connect_retries: 120\n"
        "}\n"
    )


class NatsCluster:
    """`size` nats-server nodes under `base_dir` (one sub-directory each)."""

    def __init__(self, base_dir: str | os.PathLike[str], size: int = 3, *, host: str = "127.0.0.1") -> None:
        self.base_dir = Path(base_dir)
        self.host = host
        self.names = [f"n{i + 1}" for i in range(size)]
        route_ports = [free_port(host) for _ in self.names]
        self.nodes: dict[str, ServerProcess] = {}
        for i, name in enumerate(self.names):
            node_dir = self.base_dir / name
            peers = [p for j, p in enumerate(route_ports) if j != i]
            config = write_config(node_dir / "node.conf", cluster_config(name, route_ports[i], peers, host=host))
            self.nodes[name] = ServerProcess(
                [nats_server_binary()],
                ["-c", str(config)],
                store_dir=node_dir / "store",
                host=host,
                http_port=free_port(host),
            )

    # -- lifecycle -----------------------------------------------------------
    def start(self, timeout: float = 60.0) -> NatsCluster:
        try:
            for node in self.nodes.values():
                node.start()
            self.wait_for_meta_leader(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()

    def __enter__(self) -> NatsCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def kill(self, name: str) -> None:
        """SIGKILL one node (its port and store stay for `restart`)."""
        self.nodes[name].kill()

    def restart(self, name: str) -> None:
        """Start a stopped or killed node again on the same ports and store."""
        self.nodes[name].restart()

    # -- addresses -----------------------------------------------------------
    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes.values()]

    @property
    def servers(self) -> str:
        """The comma-separated server list of the connector's `servers` option."""
        return ",".join(self.urls)

    def running(self) -> list[str]:
        return [name for name, node in self.nodes.items() if node.running]

    # -- monitoring ----------------------------------------------------------
    def jsz(self, name: str, query: str = "") -> dict[str, Any]:
        node = self.nodes[name]
        url = f"http://{self.host}:{node.http_port}/jsz{query}"
        with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 (loopback)
            return json.loads(resp.read())  # type: ignore[no-any-return]

    def meta_leader(self, *, all_current: bool = False) -> str | None:
        """The meta group leader as some running node sees it, or None during an election;
        with `all_current`, only once the leader sees every other node as a current peer
        and not `offline` (before that, an R3 stream create fails with "no suitable peers for
        placement": the leader marks a restarted peer online only at its first statsz, which
        can come after raft already calls it current)."""
        for name in self.running():
            try:
                meta = self.jsz(name).get("meta_cluster") or {}
            except OSError:
                continue
            leader = meta.get("leader") if isinstance(meta, dict) else None
            if not leader:
                continue
            if all_current:
                if leader != name:
                    continue  # only the leader knows whether its peers are current
                peers = [r for r in meta.get("replicas") or [] if r.get("current") and not r.get("offline")]
                if len(peers) < len(self.nodes) - 1:
                    continue
            return str(leader)
        return None

    def wait_for_meta_leader(self, timeout: float = 60.0) -> str:
        """Wait until the meta group has a leader that sees every node as current."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leader = self.meta_leader(all_current=True)
            if leader is not None:
                return leader
            time.sleep(0.1)
        raise TimeoutError(f"no JetStream meta leader with all peers current within {timeout:g}s")
