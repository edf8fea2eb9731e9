"""Which servers the parametrized `server` fixture runs against.

Both by default: the bundled server and the real nats-server (the oracle). Set
`JS_TEST_SERVERS` (comma separated: bundled, nats-server) to run against one
only while developing; CI runs both.
"""

from __future__ import annotations

import os

SERVER_KINDS = [
    kind.strip()
    for kind in os.environ.get("JS_TEST_SERVERS", "bundled,nats-server").split(",")
    if kind.strip()
]
