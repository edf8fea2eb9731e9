"""The sources' progress saved beside a stream: `<stream dir>/sources.json`.

`{"sources": {<index name>: <last origin seq copied>}}`, replaced atomically.
The stored `Nats-Stream-Source` headers already record progress (and win
when they are newer); this file keeps it when those messages are gone, e.g.
after the target was purged or its messages expired, as nats-server keeps
its sources state in the store. Memory streams have no directory and no file.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from jetstream_server.jetstream.persistence import write_json_atomic

logger = logging.getLogger(__name__)

PROGRESS_FILE = "sources.json"


def load_progress(directory: Path | None) -> dict[str, int]:
    if directory is None:
        return {}
    path = directory / PROGRESS_FILE
    try:
        raw = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.warning("ignoring damaged source progress %s: %s", path, exc)
        return {}
    sources = raw.get("sources") if isinstance(raw, dict) else None
    if not isinstance(sources, dict):
        return {}
    return {str(k): v for k, v in sources.items() if isinstance(v, int) and v > 0}


def save_progress(directory: Path | None, progress: dict[str, int]) -> None:
    if directory is None or not directory.is_dir():
        return
    try:
        write_json_atomic(directory / PROGRESS_FILE, {"sources": progress}, sync=False)
    except OSError as exc:  # the headers still hold the progress of what is stored
        logger.warning("could not save source progress in %s: %s", directory, exc)
