"""An input bound with an ``arrival`` column whose values already increase in partition order (as
most stored inputs do) is scanned in partition order: the summary's pass proves the order, and
the arrival numbering (a quantile job, a shuffle and a sort) is skipped. Where the proof fails —
a row out of order inside a partition or across two, equal arrival values, a null arrival —
the input is numbered by its arrival column as before, with ranges from the arrival values'
sketches that the first pass made (no quantile job of its own). Either way the Result is the
reference evaluator's."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.events import InputItem
from streamql.spark.runtime.phases import Phase, recording
from support.frames import bind, frame


@dataclass(frozen=True)
class Reading:
    meter: int
    value: int


SOURCE = sq.input("readings", Reading)
QUERY = SOURCE.where(lambda e: e.value % 3 != 0).alter_duration(sq.TICK * 4)
AT = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=3, delay=sq.TICK * 2),
                            policy=sq.AdvanceTimePolicy.DROP)


def items() -> list[InputItem[Reading]]:
    """Points in rising start order with one late event after every seventh (DROP removes it)."""
    out: list[InputItem[Reading]] = []
    for k in range(40):
        out.append(sq.Insert(10 * k, 10 * k + 1, Reading(k % 4, k)))
        if k % 7 == 6:
            out.append(sq.Insert(10 * k - 30, 10 * k - 29, Reading(9, 100 + k)))
    return out


def run(spark: SparkSession, df: Any) -> tuple[sq.Result[Any], dict[str, Phase]]:
    binder = bind(sq.Binder(spark), SOURCE, df, sq.Shape.POINT, AT, arrival=True)
    with recording(spark) as phases:
        result = binder.run(QUERY)
    return result, phases.by_name


def expected(given: list[InputItem[Reading]]) -> sq.Result[Any]:
    result = sq.reference.run(QUERY, {"readings": sq.reference.ReferenceInput(given, AT)})
    assert result.dropped > 0
    return result


def test_stored_in_arrival_order_needs_no_numbering(spark: SparkSession) -> None:
    given = items()
    df = frame(spark, Reading, sq.Shape.POINT, given, partitions=3, arrival=True, shuffled=False)
    result, phases = run(spark, df)
    assert result == expected(given)
    assert "scan summary" in phases and "arrival order" not in phases


@pytest.mark.parametrize("disorder", ["inside a partition", "across partitions", "equal values", "a null"])
def test_any_other_order_is_numbered_by_the_arrival_column(spark: SparkSession, disorder: str) -> None:
    given = items()
    df = frame(spark, Reading, sq.Shape.POINT, given, partitions=3, arrival=True, shuffled=False)
    rows = len(given)
    arrival = F.col("arrival")
    changed = {
        # the arrival values of two neighbours in the first partition swapped (rows keep their place)
        "inside a partition": F.when(arrival == 1, 2).when(arrival == 2, 1).otherwise(arrival),
        # the last row of the first partition arrives after every other row
        "across partitions": F.when(arrival == rows // 3 - 1, rows + 5).otherwise(arrival),
        # two rows share one arrival value: the order between them is the total order's, not storage's
        "equal values": F.when(arrival == 5, 4).otherwise(arrival),
        "a null": F.when(arrival == 7, None).otherwise(arrival),
    }[disorder]
    df = df.withColumn("arrival", changed.cast("long"))
    # the same items in the order the changed arrival values give, as the reference reads them
    order = sorted(range(rows), key=lambda i: {
        "inside a partition": {1: 2, 2: 1}.get(i, i),
        "across partitions": rows + 5 if i == rows // 3 - 1 else i,
        "equal values": 4 if i == 5 else i,
        "a null": i,
    }[disorder])
    if disorder == "a null":
        binder = bind(sq.Binder(spark), SOURCE, df, sq.Shape.POINT, AT, arrival=True, bad_rows="drop")
        with recording(spark) as recorded:
            result = binder.run(QUERY)
        reference = expected([item for i, item in enumerate(given) if i != 7])
        assert (result.events, result.dropped, result.bad_rows) == (reference.events, reference.dropped, 1)
        assert recorded.by_name["arrival order"].jobs == 0
        return
    result, phases = run(spark, df)
    assert result == expected([given[i] for i in order])
    # numbered with ranges from the first pass's sketches: the numbering's plan runs no job itself
    assert phases["arrival order"].jobs == 0
    assert phases["scan summary"].times == 2
