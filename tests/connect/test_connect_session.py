"""What a Spark Connect session shows that a classic one does not (docs/spark-connect.md). These
tests run only in the Spark Connect group (``tests/connect/test_on_spark_connect.py``), whose test
session is a Spark Connect one; in any other run they are skipped."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

import streamql as sq
from conftest import CONNECT
from streamql.spark.runtime.connect import is_connect, is_session, parallelism
from streamql.spark.runtime.phases import recording
from streamql.spark.runtime.workers import run_probe
from streamql.time import from_micros
from support.frames import frame

pytestmark = pytest.mark.skipif(not CONNECT, reason="runs in the Spark Connect group only (STREAMQL_SESSION=connect)")


@dataclass(frozen=True)
class Reading:
    meter: str
    watts: float


READINGS = sq.input("readings", Reading, sq.Shape.POINT)
EVERY = sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=1, delay=timedelta(0)),
                               policy=sq.AdvanceTimePolicy.DROP)


def _items() -> list[Any]:
    return [sq.Insert(from_micros(t), from_micros(t + 1), Reading(m, w))
            for t, m, w in [(0, "a", 1.0), (5, "b", 2.0), (3, "a", 9.0), (12, "a", 4.0), (20, "b", 1.0)]]


def test_the_session_is_a_spark_connect_one(spark: Any) -> None:
    assert is_connect(spark) and is_session(spark)
    assert parallelism(spark) == 2  # local[2]
    assert sq.local_session(connect=True) is spark  # the active Connect session, as it is


def test_a_query_gives_the_reference_result_and_counts_no_jobs(spark: Any) -> None:
    q = READINGS.group_by(lambda r: r.meter).tumbling_window(timedelta(microseconds=10)).select(
        lambda w: Reading(w.key, w.sum(lambda r: r.watts)))
    items = _items()
    binder = sq.Binder(spark).bind(READINGS, frame(spark, Reading, sq.Shape.POINT, items), start="start",
                                   kind="kind", advance_time=EVERY)
    with recording(spark) as phases:
        result = binder.run(q, late=True)
    expected = sq.reference.run(q, {"readings": sq.reference.ReferenceInput(items, EVERY)}, late=True)
    assert result == expected
    assert result.dropped == 1 and len(result.late) == 1  # the reading at 3 came after the CTI at 5
    assert result.events  # windows were released
    assert phases.jobs is None and all(p.jobs is None for p in phases.by_name.values())
    assert "job" not in phases.table()


def test_the_workers_are_probed_through_the_server(spark: Any) -> None:
    probe = run_probe(spark)
    assert probe.failures == ()


def test_a_running_query_with_a_static_input_is_refused_with_the_reason(spark: Any, tmp_path: Any) -> None:
    stream = spark.readStream.format("rate").load().selectExpr("value as start", "'m' as meter", "1.0d as watts")
    static = spark.createDataFrame([(0, "m", 1.0)], "start long, meter string, watts double")
    other = sq.input("other", Reading, sq.Shape.POINT)
    binder = (sq.Binder(spark).bind(READINGS, stream, start="start", advance_time=EVERY)
              .bind(other, static, start="start"))
    q = READINGS.union(other)
    with pytest.raises(sq.BindingError, match="over Spark Connect a running query reads streaming inputs only"):
        binder.start(q, sink=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"))
