"""What the driver does with the tasks' commit messages: log, warn, check the dedup windows.

Shared by the batch and the stream writer's `commit`. Logs the totals
(`sink_task.summarize`); warns when first task attempts got duplicate acks
(expected in a micro-batch replayed after a restart, otherwise a sign that
ids collide); checks the dedup window of every stream the pub acks named
(`dedup_check.check_windows`: cached, warns or raises by mode).
"""

from __future__ import annotations

import logging

from pyspark.sql.datasource import WriterCommitMessage

from spark_jetstream.options import WriteOptions
from spark_jetstream.write.dedup_check import check_windows
from spark_jetstream.write.sink_task import acked_streams, summarize

log = logging.getLogger(__name__)


def report_commit(options: WriteOptions, messages: list[WriterCommitMessage | None], what: str) -> dict[str, int]:
    """Log the commit of `what` (e.g. "batch 3"), check the targets; return the totals."""
    totals = summarize(messages)
    streams = acked_streams(messages)
    log.info("jetstream sink %s committed to %s: %s", what, ", ".join(sorted(streams)) or "-", totals)
    if totals["first_attempt_duplicates"]:
        log.warning(
            "jetstream sink %s: %d message(s) of first task attempts were already in the stream "
            "(duplicate acks): expected when a micro-batch is replayed after a restart; otherwise "
            "ids collide (two writers with the same msgIdScope, msgIdColumns that do not identify "
            "a row, or msg_id values reused)",
            what,
            totals["first_attempt_duplicates"],
        )
    check_windows(options, streams)
    return totals
