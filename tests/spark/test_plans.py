"""Distribution (docs/architecture.md#rules-of-execution-on-spark): the physical plan of a bound
query never collapses the data into one
partition (no ``SinglePartition`` exchange) and never pairs rows without an equi-join key (no
``CartesianProduct``/``BroadcastNestedLoopJoin``) — for inputs in partition order and inputs
with an ``arrival`` column, under DROP and ADJUST with late events, with the join applying the
scan's decisions in the plan (or, when few, the decisions as literals of the plan). And the arrival-order scan over several scan units: late
events in every unit, in partition order or shuffled with an arrival column, give the
reference evaluator's Result."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.events import InputItem
from streamql.spark.ingress import arrival_scan
from streamql.spark.ingress import scan as ingress
from streamql.spark.runtime.jobs import counting_jobs
from streamql.time import to_micros
from support.frames import bind, frame
from support.plans import assert_distributed, physical_plan


@dataclass(frozen=True)
class Sample:
    sensor: int
    value: int


SOURCE = sq.input("samples", Sample, shape=sq.Shape.INTERVAL)
QUERY = SOURCE.where(lambda e: e.value >= 0).select(lambda e: Sample(e.sensor, e.value * 2)).shift(sq.TICK * 3)


def late_items(count: int, every: int) -> list[InputItem[Sample]]:
    """``count`` intervals in rising start order, with a late one (starting 40 ticks back, so that
    ADJUST moves it and, for the shorter ones, drops it) after every ``every`` events."""
    items: list[InputItem[Sample]] = []
    for k in range(count):
        items.append(sq.Insert(100 + 10 * k, 100 + 10 * k + 15, Sample(k % 3, k)))
        if k % every == every - 1:
            length = 50 if k % (2 * every) == every - 1 else 20
            items.append(sq.Insert(60 + 10 * k, 60 + 10 * k + length, Sample(9, -k if k % 4 == 0 else k)))
    return items


def settings(policy: sq.AdvanceTimePolicy) -> sq.AdvanceTimeSettings:
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=2, flush=True), policy=policy)


@contextmanager
def spark_conf(spark: SparkSession, values: dict[str, str]) -> Iterator[None]:
    """Sets runtime SQL settings for the block, then restores them."""
    before: dict[str, Optional[str]] = {k: spark.conf.get(k, None) for k in values}
    for k, v in values.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def released_rows(df: DataFrame) -> list[tuple[int, int, int, int]]:
    rows = df.select(F.unix_micros("start"), F.unix_micros("end"), "sensor", "value").collect()
    return sorted((r[0], r[1], r[2], r[3]) for r in rows)


def reference_rows(items: list[InputItem[Sample]], at: sq.AdvanceTimeSettings) -> list[tuple[int, int, int, int]]:
    result = sq.reference.run(QUERY, {"samples": sq.reference.ReferenceInput(items, at)})
    assert result.dropped + result.adjusted > 0  # the decision join has work to do
    return sorted((to_micros(e.start), to_micros(e.end), e.payload.sensor, e.payload.value) for e in result.events)


@pytest.mark.parametrize("policy", list(sq.AdvanceTimePolicy), ids=lambda p: p.name)
@pytest.mark.parametrize("arrival", [False, True], ids=["partition-order", "arrival-column"])
def test_plan_has_no_single_partition_and_no_cartesian_join(spark: SparkSession, arrival: bool,
                                                           policy: sq.AdvanceTimePolicy,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingress, "INLINE_DECISIONS", 0)  # as with more decisions than the plan takes as literals
    items = late_items(12, 4)
    at = settings(policy)
    df = frame(spark, Sample, sq.Shape.INTERVAL, items, partitions=3, arrival=arrival, seed=7)
    out = bind(sq.Binder(spark), SOURCE, df, sq.Shape.INTERVAL, at, arrival=arrival).to_dataframe(QUERY)
    before = physical_plan(out)
    assert_distributed(before)
    # the decisions of the scan (drop, move a start) are applied by an equi-join on the row's sequence
    assert "_sq_d_seq" in before and ("BroadcastHashJoin" in before or "SortMergeJoin" in before)
    if arrival:
        # arrival order: rows ranged by arrival into scan units, numbered within each unit
        assert "Exchange hashpartitioning(_sq_unit" in before and "Window [row_number()" in before
    out.collect()
    # what adaptive execution finally ran
    after = physical_plan(out)
    assert_distributed(after)


def test_plan_without_broadcast_joins_is_a_shuffled_equi_join(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    items = late_items(12, 3)
    at = settings(sq.AdvanceTimePolicy.ADJUST)
    # as with millions of decisions: no literals, no broadcast hint, and Spark may not broadcast on its own
    monkeypatch.setattr(ingress, "INLINE_DECISIONS", 0)
    monkeypatch.setattr(ingress, "BROADCAST_DECISIONS", 0)
    with spark_conf(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
        df = frame(spark, Sample, sq.Shape.INTERVAL, items, partitions=3, arrival=True, seed=3)
        out = bind(sq.Binder(spark), SOURCE, df, sq.Shape.INTERVAL, at, arrival=True).to_dataframe(QUERY)
        assert released_rows(out) == reference_rows(items, at)
        plan = physical_plan(out)
    assert_distributed(plan)
    assert "SortMergeJoin [_sq_seq" in plan or "ShuffledHashJoin [_sq_seq" in plan, plan


@pytest.mark.parametrize("policy", list(sq.AdvanceTimePolicy), ids=lambda p: p.name)
def test_few_decisions_are_literals_of_the_plan_and_run_no_job_of_their_own(spark: SparkSession,
                                                                           policy: sq.AdvanceTimePolicy,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """At most ``INLINE_DECISIONS`` decisions are brought to the driver once and written into the
    plan: no join applies them, and each job over the output is one job fewer than with the
    broadcast join (whose build side is a job of every action)."""
    items = late_items(12, 4)
    at = settings(policy)

    def output() -> DataFrame:
        df = frame(spark, Sample, sq.Shape.INTERVAL, items, partitions=3, arrival=True, seed=7)
        return bind(sq.Binder(spark), SOURCE, df, sq.Shape.INTERVAL, at, arrival=True).to_dataframe(QUERY)

    inlined = output()
    plan = physical_plan(inlined)
    assert_distributed(plan)
    assert "_sq_d_seq" not in plan and "Join" not in plan, plan
    with counting_jobs(spark, "the inlined decisions") as few:
        assert released_rows(inlined) == reference_rows(items, at)
    monkeypatch.setattr(ingress, "INLINE_DECISIONS", 0)
    joined = output()
    assert "_sq_d_seq" in physical_plan(joined)
    with counting_jobs(spark, "the joined decisions") as many:
        assert released_rows(joined) == reference_rows(items, at)
    assert few.jobs is not None and many.jobs is not None
    assert few.jobs < many.jobs, (few.jobs, many.jobs)


def test_a_row_without_a_decision_takes_none_among_inlined_ones(spark: SparkSession) -> None:
    """The literals' lookup: the rows named take their action and time (a null time too), the others nulls."""
    events = spark.createDataFrame([(1,), (2,), (3,), (2**40,)], "_sq_seq long")
    decided = [Row(seq=2, action=arrival_scan.DROP, time=None), Row(seq=2**40, action=arrival_scan.ADJUST_START, time=7)]
    rows = ingress._with_inlined(events, decided).orderBy("_sq_seq").collect()
    assert [(r[0], r[1], r[2]) for r in rows] == [(1, None, None), (2, arrival_scan.DROP, None), (3, None, None),
                                                  (2**40, arrival_scan.ADJUST_START, 7)]
    schema = ingress._with_inlined(events, decided).schema
    assert (schema["_sq_action"].dataType.simpleString(), schema["_sq_moved_to"].dataType.simpleString()) == ("int", "bigint")


@pytest.mark.parametrize("arrival", [False, True], ids=["partition-order", "arrival-column"])
def test_to_dataframe_applies_the_decisions_of_several_units(spark: SparkSession, arrival: bool) -> None:
    items = late_items(12, 4)  # late events in the 2nd and 3rd of 3 partitions
    at = settings(sq.AdvanceTimePolicy.DROP)
    df = frame(spark, Sample, sq.Shape.INTERVAL, items, partitions=3, arrival=arrival, seed=7)
    out = bind(sq.Binder(spark), SOURCE, df, sq.Shape.INTERVAL, at, arrival=arrival).to_dataframe(QUERY)
    # the events late for the CTIs (value 14 after k = 7 and 22 after k = 11, both shifted by 3) are dropped
    assert released_rows(out) == reference_rows(items, at)
    assert [r[3] for r in released_rows(out)] == [2 * k for k in range(12)]


# --- scan units ----------------------------------------------------------------------------------------


@pytest.fixture
def dirty_units(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the scan units that hold late events: those the driver could not carry the state across
    (they are simulated) and those whose summary decided their late events (``decide_late``)."""
    dirty: list[int] = []
    clean_transfer = arrival_scan.clean_transfer

    def counting(summary: arrival_scan.Summary, state: arrival_scan.ScanState,
                 at: arrival_scan.ScanSettings) -> Optional[arrival_scan.ScanState]:
        after = clean_transfer(summary, state, at)
        if after is None or summary.decided:  # simulated, or its late events decided by its summary
            dirty.append(summary.unit)
        return after

    monkeypatch.setattr(arrival_scan, "clean_transfer", counting)
    return dirty


SCAN_ITEMS: list[InputItem[Sample]] = [
    *late_items(10, 5),
    sq.Cti(300),                                   # an explicit CTI row in the middle
    sq.Insert(250, 400, Sample(7, 1)),             # late for that CTI: moved or dropped
    sq.Insert(200, 210, Sample(8, 4)),             # wholly before the CTI: dropped by both policies
    *[sq.Insert(400 + 7 * k, 420 + 7 * k, Sample(k % 2, 100 + k)) for k in range(12)],
    sq.Insert(380, 390, Sample(8, 2)),             # wholly before the CTI: dropped by both policies
    *[sq.Insert(600 + 5 * k, 603 + 5 * k, Sample(2, 200 + k)) for k in range(4)],
    sq.Insert(590, 595, Sample(8, 5)),
    *[sq.Insert(600 + 5 * k, 603 + 5 * k, Sample(2, 200 + k)) for k in range(4, 8)],
    sq.Insert(560, 700, Sample(8, 3)),
]


def test_late_events_in_several_scan_units(spark: SparkSession, dirty_units: list[int]) -> None:
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=3, delay=sq.TICK * 5, flush=True),
                                policy=sq.AdvanceTimePolicy.ADJUST)
    expected = sq.reference.run(QUERY, {"samples": sq.reference.ReferenceInput(SCAN_ITEMS, at)})
    # late events moved to the CTI and late events lying wholly before it (removed)
    assert (expected.dropped, expected.adjusted, len(expected.events)) == (3, 4, 33)
    # partition order: each of the 4 partitions is a scan unit, and each holds late events
    ordered = frame(spark, Sample, sq.Shape.INTERVAL, SCAN_ITEMS, partitions=4)
    assert bind(sq.Binder(spark), SOURCE, ordered, sq.Shape.INTERVAL, at).run(QUERY) == expected
    assert len(set(dirty_units)) >= 3
    dirty_units.clear()
    # shuffled across 3 partitions, ordered by the arrival column alone: 4 arrival ranges (one per
    # shuffle partition) are the scan units
    with spark_conf(spark, {"spark.sql.shuffle.partitions": "4"}):
        shuffled = frame(spark, Sample, sq.Shape.INTERVAL, SCAN_ITEMS, partitions=3, arrival=True, seed=11)
        assert bind(sq.Binder(spark), SOURCE, shuffled, sq.Shape.INTERVAL, at, arrival=True).run(QUERY) == expected
    assert len(set(dirty_units)) >= 3
