"""The two queries' DataFrames (`jobs.orders.pipeline`) on a batch read: each payload parsed once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.orders import pipeline
from jobs.orders import transforms as T
from jobs.orders.generator import generate

pytestmark = pytest.mark.spark


def executed_plan(df, capsys) -> str:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    df.explain()
    return str(capsys.readouterr().out)


@pytest.mark.parametrize("query", ["routed", "revenue"])
def test_each_payload_is_parsed_once(spark, capsys, query: str) -> None:  # type: ignore[no-untyped-def]
    source = T.source_frame(spark, generate(20))
    cfg = pipeline.PipelineConfig(servers="", checkpoint_dir=Path())
    df = pipeline.routed_frame(source) if query == "routed" else pipeline.revenue_frame(source, cfg)
    plan = executed_plan(df, capsys)
    # A filter pushed below the parse would repeat from_json once per field it tests.
    assert plan.count("from_json(") == 1, plan
    assert plan.count("get_json_object(") <= 1, plan


def test_the_revenue_frame_counts_only_valid_events(spark) -> None:  # type: ignore[no-untyped-def]
    events = list(generate(400, seed=3, bad_share=0.1))
    cfg = pipeline.PipelineConfig(servers="", checkpoint_dir=Path())
    rows = pipeline.revenue_frame(T.source_frame(spark, events), cfg).collect()
    bodies = [json.loads(r.data) for r in rows]
    counted = sum(b["created"] + b["paid"] + b["shipped"] for b in bodies)
    assert counted == sum(e.valid for e in events)
