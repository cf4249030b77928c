"""The hand-worked multi-stream seed examples on Spark: SQLstream's ordered merge of two streams with
and without a rowtime bound on the slow input (seed 004), and StreamInsight's fast-data /
slow-reference join with and without CTI import (seed 001), also with the reference data as edges
that have not ended yet.

Every case asserts the events worked out by hand (as tests/reference/test_joins.py does) and that
Spark's whole Result equals ``sq.reference.run`` on the same items. Inputs carry arrival columns:
list positions are one clock across the inputs, as in the reference evaluator.
"""
from __future__ import annotations

from typing import Any, Optional

from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem
from streamql.query.nodes import inputs_of

from support.frames import bind, frame
from support.stream_seeds import (DATA, DATA_ITEMS, IMPORT, JOINED, LOOKUP_ITEMS, MERGED, P_ROWS, Q_ROWS,
                                  ROWTIME_BOUNDS, MeterSite, Reading, Row, SiteReading, at, hm, point)

TICK = sq.TICK


def run(spark: SparkSession, query: sq.Stream[Any],
        inputs: dict[str, tuple[list[InputItem[Any]], Optional[sq.AdvanceTimeSettings]]]) -> sq.Result[Any]:
    """Runs ``query`` on Spark and in the reference evaluator over the same items; they must agree."""
    read = inputs_of(query.node)
    binder = sq.Binder(spark)
    for name, (items, settings) in inputs.items():
        node = read[name]
        df = frame(spark, node.schema.cls, node.shape, items, partitions=2, arrival=True, seed=len(items))
        binder = bind(binder, sq.Stream(node), df, node.shape, settings, arrival=True)
    result = binder.run(query)
    given = {name: sq.reference.ReferenceInput(items, settings) for name, (items, settings) in inputs.items()}
    assert result == sq.reference.run(query, given)
    return result


# --- seed 004: the ordered merge --------------------------------------------------------------------


def test_seed_merge_stops_when_the_slow_input_has_no_rowtime_bound(spark: SparkSession) -> None:
    result = run(spark, MERGED, {"P": (P_ROWS, ROWTIME_BOUNDS), "Q": (Q_ROWS, ROWTIME_BOUNDS)})
    # "1:00 from P, 1:01 from Q, 1:02 from Q, 1:03 from P, 1:04 from Q. And now it stops"
    assert [(e.start, e.payload.stream) for e in result.events] == [
        (hm(1, 0), "P"), (hm(1, 1), "Q"), (hm(1, 2), "Q"), (hm(1, 3), "P"), (hm(1, 4), "Q")]
    assert result.final_cti == hm(1, 4) + TICK


def test_seed_merge_moves_on_with_a_rowtime_bound_on_the_slow_input(spark: SparkSession) -> None:
    bounded: list[InputItem[Row]] = [*Q_ROWS, sq.Cti(hm(1, 10))]
    result = run(spark, MERGED, {"P": (P_ROWS, ROWTIME_BOUNDS), "Q": (bounded, ROWTIME_BOUNDS)})
    # the next Q row will not be before 1:10: 1:06 from P goes out at once
    assert [(e.start, e.payload.stream) for e in result.events][-2:] == [(hm(1, 4), "Q"), (hm(1, 6), "P")]
    assert result.final_cti == hm(1, 6) + TICK


# --- seed 001: the fast-data / slow-reference join --------------------------------------------------


def test_seed_fast_slow_join_without_import_releases_nothing(spark: SparkSession) -> None:
    result = run(spark, JOINED, {"dataStream": (DATA_ITEMS, None), "lookupStream": (LOOKUP_ITEMS, None)})
    assert result.events == [] and result.final_cti is None


def test_seed_fast_slow_join_with_import_releases_as_fast_as_the_data(spark: SparkSession) -> None:
    result = run(spark, JOINED, {"dataStream": (DATA_ITEMS, None), "lookupStream": (LOOKUP_ITEMS, IMPORT)})
    assert [(e.start, e.end, e.payload) for e in result.events] == [
        (at(10), at(10) + TICK, SiteReading("m1", "north", 100)),
        (at(20), at(20) + TICK, SiteReading("m2", "south", 250)),
        (at(30), at(30) + TICK, SiteReading("m1", "east", 200)),
    ]
    assert result.final_cti == at(30) + TICK


def test_open_reference_edges_join_points_before_they_close(spark: SparkSession) -> None:
    edges = sq.input("lookupStream", MeterSite, shape=sq.Shape.EDGE)
    query = DATA.join(edges, lambda r, m: r.meter == m.meter, lambda r, m: SiteReading(r.meter, m.site, r.watts))
    data: list[InputItem[Reading]] = [point(at(10), Reading("m1", 100)), sq.Cti(at(10) + TICK),
                                      point(at(20), Reading("m1", 250)), sq.Cti(at(20) + TICK)]
    moves: list[InputItem[MeterSite]] = [
        sq.StartEdge(at(0), MeterSite("m1", "north")), sq.EndEdge(at(0), at(15), MeterSite("m1", "north")),
        sq.StartEdge(at(15), MeterSite("m1", "east"))]
    result = run(spark, query, {"dataStream": (data, None), "lookupStream": (moves, IMPORT)})
    # 'east' never ends here, yet the reading at 12:00:20 is released with it: 'east' surely lasts
    # past the imported CTI 12:00:20 + t
    assert [(e.start, e.payload.site) for e in result.events] == [(at(10), "north"), (at(20), "east")]
