"""The driver's commit report (write/commit_report.py, sink_task.summarize): totals, the
streams the acks named, and a warning when first task attempts got duplicate acks."""

from __future__ import annotations

import pytest

from spark_jetstream.options import WriteOptions
from spark_jetstream.write.commit_report import report_commit
from spark_jetstream.write.sink_task import JetStreamCommitMessage, acked_streams, summarize

LOGGER = "spark_jetstream.write.commit_report"
OFF = WriteOptions.from_options({"dedupWindowCheck": "0"})  # no server: the window check is off


def message(partition: int, duplicates: int, attempt: int, streams: tuple[str, ...] = ("OUT",)) -> JetStreamCommitMessage:
    return JetStreamCommitMessage(
        partition_id=partition, rows=10, published=10 - duplicates, duplicates=duplicates, reconnects=0,
        streams=streams, attempt=attempt,
    )


def test_totals_and_streams() -> None:
    msgs = [message(0, 0, 0), message(1, 3, 1, ("OUT", "DLQ")), None]
    assert summarize(msgs) == {"tasks": 2, "rows": 20, "published": 17, "duplicates": 3,
                               "first_attempt_duplicates": 0, "reconnects": 0}
    assert acked_streams(msgs) == {"OUT", "DLQ"}


def test_duplicates_in_a_retry_are_expected(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger=LOGGER):
        totals = report_commit(OFF, [message(0, 0, 0), message(1, 4, 1)], "batch 3")
    assert totals["duplicates"] == 4 and totals["first_attempt_duplicates"] == 0
    assert "jetstream sink batch 3 committed to OUT" in caplog.text
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_duplicates_in_a_first_attempt_are_counted_and_warned(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger=LOGGER):
        totals = report_commit(OFF, [message(0, 2, 0), message(1, 1, 0)], "write")
    assert totals["first_attempt_duplicates"] == 3
    (warning,) = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "3 message(s) of first task attempts were already in the stream" in warning.getMessage()


def test_duplicates_of_a_tasks_own_resent_frames_are_no_collision(caplog: pytest.LogCaptureFixture) -> None:
    """A frame re-sent after silence whose first copy was stored is acked as a duplicate: the
    task's own copy, not an id another row or writer used."""
    own = JetStreamCommitMessage(partition_id=0, rows=10, published=8, duplicates=2, reconnects=0,
                                 attempt=0, resent_duplicates=2)
    with caplog.at_level("INFO", logger=LOGGER):
        totals = report_commit(OFF, [own, message(1, 1, 0)], "write")
    assert totals["duplicates"] == 3 and totals["first_attempt_duplicates"] == 1
