"""Lag from Spark's progress reports (read/lag.py): latestOffset - endOffset per stream (no server)."""

from __future__ import annotations

import json

from spark_jetstream.read.lag import offset_seqs, progress_lag, source_lag


def test_offset_seqs_reads_both_formats_and_ignores_others() -> None:
    assert offset_seqs('{"streams": {"A": 3, "B": 9}}') == {"A": 3, "B": 9}
    assert offset_seqs({"stream": "A", "seq": 4}) == {"A": 4}
    assert offset_seqs(None) == {} and offset_seqs("{}") == {} and offset_seqs('{"logOffset": 2}') == {}
    assert offset_seqs("[1]") == {}


def test_progress_lag() -> None:
    progress = {
        "sources": [
            {"endOffset": json.dumps({"streams": {"A": 10, "B": 5}}),
             "latestOffset": json.dumps({"streams": {"A": 25, "B": 5}})},
            {"endOffset": '{"logOffset": 3}', "latestOffset": None},  # another kind of source
        ]
    }
    assert progress_lag(progress) == {"A": 15, "B": 0}
    assert progress_lag(json.dumps(progress)) == {"A": 15, "B": 0}
    assert progress_lag(None) == {}
    assert source_lag({"endOffset": '{"streams": {"A": 7}}', "latestOffset": None}) == {}
