"""How lame duck mode spreads the closing of clients (app/lame_duck.close_pacing)."""

from __future__ import annotations

import pytest

from jetstream_server.app.lame_duck import close_pacing


def test_close_pacing_matches_nats_server() -> None:
    assert close_pacing(2, 30.0, 1.0) == (1.0, 1)  # 14.5 s each, capped at a second
    assert close_pacing(100, 30.0, 10.0) == (0.2, 1)
    # nothing left of the duration after the grace period: one second shared
    assert close_pacing(3, 10.0, 10.0) == (pytest.approx(1 / 3), 1)
