"""Fixtures of the browser tests: one headless Chromium per module (`browser`), skipped
with the reason when there is none (scripts/ensure-chromium.sh installs it in `make test`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from headless_chromium import BrowserError, Chromium, find_chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    if find_chromium() is None:
        pytest.skip("no chromium on this machine: scripts/ensure-chromium.sh installs Debian's "
                    "chromium (as root, with apt-get)")
    try:
        chromium = Chromium.start(tmp_path_factory.mktemp("chromium-profile"))
    except BrowserError as exc:
        pytest.skip(f"chromium does not start here: {exc}")
    try:
        yield chromium
    finally:
        chromium.close()
