"""The reference model of the permission rules (tests/support/permission_model.py)
against both servers: random permission lists (seeded, printed on failure),
random subjects, every PUB and SUB decision compared.

The unit test `tests/server/unit/test_permissions.py` compares the model with
the bundled server's decision functions on many more cases; this one ties the
model to the real nats-server, so both agree with the oracle.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from permission_model import model_publish_allowed, model_subscribe_allowed
from raw_client import RawClient

from jetstream_testing.process import ServerProcess

ConfigServer = Callable[..., ServerProcess]

USERS = 8
SUBJECTS = 24
TOKENS = ["a", "b", "c"]


def _filter(rng: random.Random) -> str:
    parts = [rng.choice([*TOKENS, "*"]) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        parts[-1] = ">"
    return ".".join(parts)


def _literal(rng: random.Random) -> str:
    return ".".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 3)))


def _entries(rng: random.Random, queues: bool) -> tuple[str, ...] | None:
    if rng.random() < 0.3:
        return None
    out = []
    for _ in range(rng.randint(1, 3)):
        entry = _filter(rng)
        if queues and rng.random() < 0.3:
            entry += " " + rng.choice(["q", "r", "q.*"])
        out.append(entry)
    return tuple(out)


def _block(allow: tuple[str, ...] | None, deny: tuple[str, ...] | None) -> str:
    parts = []
    if allow:
        parts.append(f"allow: {json.dumps(list(allow))}")
    if deny:
        parts.append(f"deny: {json.dumps(list(deny))}")
    return "{ " + ", ".join(parts) + " }" if parts else "{}"


def test_servers_follow_the_model(config_server: ConfigServer) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    users = []
    lines = []
    for i in range(USERS):
        perms = (_entries(rng, False), _entries(rng, False), _entries(rng, True), _entries(rng, True))
        users.append(perms)
        pub_allow, pub_deny, sub_allow, sub_deny = perms
        lines.append(
            f"{{ user: u{i}, password: p, permissions: {{ "
            f"publish: {_block(pub_allow, pub_deny)}, subscribe: {_block(sub_allow, sub_deny)} }} }}"
        )
    config = "authorization {\n  users = [\n    " + "\n    ".join(lines) + "\n  ]\n}\n"
    srv = config_server(config)
    for i, (pub_allow, pub_deny, sub_allow, sub_deny) in enumerate(users):
        c = RawClient(srv.port)
        c.send(b'CONNECT {"verbose":false,"user":"u%d","pass":"p"}\r\n' % i)
        expected: list[bytes] = []
        ops = b""
        for n in range(SUBJECTS):
            pub = _literal(rng)
            ops += f"PUB {pub} 0\r\n\r\n".encode()
            if not model_publish_allowed(pub_allow, pub_deny or (), pub):
                expected.append(f"-ERR 'Permissions Violation for Publish to \"{pub}\"'".encode())
            sub = _filter(rng) if rng.random() < 0.5 else _literal(rng)
            queue = rng.choice([None, "q", "r", "q.1"])
            ops += f"SUB {sub} {queue or ''} {n}\r\n".replace("  ", " ").encode()
            if not model_subscribe_allowed(sub_allow or (), sub_deny or (), sub, queue):
                text = f"Permissions Violation for Subscription to \"{sub}\""
                if queue:
                    text += f' using queue "{queue}"'
                expected.append(f"-ERR '{text}'".encode())
        c.send(ops)
        got = [line for line in c.until_pong() if line.startswith(b"-ERR")]
        assert got == expected, f"seed {seed}, user u{i}: {users[i]}\nconfig:\n{config}"
        c.close()
