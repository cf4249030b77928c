"""The first summary passes of a query's inputs in one Spark job (``scan.first_passes``): each
input's summaries are those its own pass makes — inputs with and without an arrival column,
with CTI rows, edges, and an input that imports CTIs (on one arrival clock it waits for the other's
scan and makes its own) — and a query over several inputs runs one summary job where it ran one per
input, with the reference evaluator's result."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import streamql as sq
from streamql.spark.ingress.binding import prepare, scan_settings
from streamql.spark.ingress.scan import _summarized, first_passes
from streamql.spark.runtime.phases import recording
from support.frames import bind, frame


@dataclass(frozen=True)
class Reading:
    meter: int
    value: int


POINTS = sq.input("points", Reading, sq.Shape.POINT)
INTERVALS = sq.input("intervals", Reading, sq.Shape.INTERVAL)
EDGES = sq.input("edges", Reading, sq.Shape.EDGE)
IMPORTER = sq.input("importer", Reading, sq.Shape.POINT)
CLOCKED = sq.input("clocked", Reading, sq.Shape.INTERVAL)

EVERY_2 = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=2, delay=sq.TICK * 2))
ADJUSTING = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=3), policy=sq.AdvanceTimePolicy.ADJUST)


def points(offset: int) -> list[Any]:
    """Points in rising order with one late now and then."""
    out: list[Any] = [sq.Insert(5 * k + offset, 5 * k + offset + 1, Reading(k % 3, k)) for k in range(16)]
    out.insert(9, sq.Insert(offset + 2, offset + 3, Reading(7, 99)))
    return out


def intervals() -> list[Any]:
    """Intervals in rising start order with a CTI row among them."""
    out: list[Any] = [sq.Insert(4 * k, 4 * k + 3 + k % 4, Reading(k % 2, k)) for k in range(12)]
    out.insert(6, sq.Cti(14))
    return out


def edges() -> list[Any]:
    """Edge events, each start edge closed three rows later."""
    out: list[Any] = []
    for k in range(10):
        out.append(sq.StartEdge(3 * k, Reading(k % 2, k)))
        if k >= 2:
            out.append(sq.EndEdge(3 * (k - 2), 3 * (k - 2) + 4, Reading(k % 2, k - 2)))
    return out


def binder(spark: SparkSession) -> sq.Binder:
    b = sq.Binder(spark)
    b = bind(b, POINTS, frame(spark, Reading, sq.Shape.POINT, points(0)), sq.Shape.POINT, EVERY_2)
    # stored in arrival order: the pass in partition order holds
    b = bind(b, INTERVALS, frame(spark, Reading, sq.Shape.INTERVAL, intervals(), arrival=True, shuffled=False),
             sq.Shape.INTERVAL, ADJUSTING, arrival=True)
    # stored out of arrival order: the first pass finds that, the input is numbered and passed again
    b = bind(b, EDGES, frame(spark, Reading, sq.Shape.EDGE, edges(), arrival=True, seed=3), sq.Shape.EDGE, EVERY_2,
             arrival=True)
    b = bind(b, IMPORTER, frame(spark, Reading, sq.Shape.POINT, points(1)), sq.Shape.POINT,
             sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("points")))
    return bind(b, CLOCKED, frame(spark, Reading, sq.Shape.INTERVAL, intervals(), arrival=True), sq.Shape.INTERVAL,
                sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("intervals")), arrival=True)


def own_pass(b: Any) -> list[dict[str, Any]]:
    """The first summary pass of binding ``b`` by itself (in partition order)."""
    prepared: DataFrame = prepare(b, partition_order=True)
    return _summarized(b, prepared, scan_settings(b.advance_time), imports_ctis=False,
                       with_arrival=b.arrival is not None).summaries


@pytest.mark.slow  # the deep tier: the default tier's multi-input tests check the results
def test_the_passes_made_together_are_each_inputs_own(spark: SparkSession) -> None:
    bindings = binder(spark).bindings
    names = ["points", "intervals", "edges", "importer", "clocked"]
    passes = first_passes(bindings, names)
    # an input that imports CTIs on one arrival clock numbers the imported CTIs in: its own scan
    assert sorted(passes) == ["edges", "importer", "intervals", "points"]
    for name, together in passes.items():
        assert together.summaries == own_pass(bindings[name]), name
        assert together.prepared is not None
    assert passes["intervals"].arrival_range is not None and passes["points"].arrival_range is None
    # one input alone: its own pass is the one job
    assert first_passes(bindings, ["points", "clocked"]) == {}


def test_a_query_over_several_inputs_runs_one_summary_job(spark: SparkSession) -> None:
    q = POINTS.join(INTERVALS, lambda a, c: a.meter == c.meter, lambda a, c: Reading(a.meter, a.value + c.value))
    with recording(spark) as phases:
        result = binder(spark).run(q)
    expected = sq.reference.run(q, {"points": sq.reference.ReferenceInput(points(0), EVERY_2),
                                    "intervals": sq.reference.ReferenceInput(intervals(), ADJUSTING)})
    assert result == expected
    assert result.events and result.dropped == 1
    summary = phases.by_name["scan summary"]
    if summary.jobs is not None:  # a classic session counts its jobs
        assert summary.jobs == 1, phases.table()
