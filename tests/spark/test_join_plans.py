"""Distribution of the multi-stream operators (docs/architecture.md#rules-of-execution-on-spark): a
temporal join — with keys, with
``on=None``, with events that never end — an anti-join and a clip are equi-joins plus filters:
their plans hold no cartesian product, no nested-loop join and no ``SinglePartition`` exchange;
an event that never ends or spans the whole timeline becomes a bounded number of bucket rows; and
the results over multi-partition inputs are the reference evaluator's."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import streamql as sq
from streamql.events import InputItem
from streamql.query.joins import Join
from streamql.spark.base.columns import END, START
from streamql.spark.operators.joins import R_END, R_START, TimeBuckets, equality_keys, meeting_places, time_buckets
from streamql.time import INFINITY_MICROS
from support.depth import tiered
from support.frames import bind, frame
from support.plans import assert_distributed, physical_plan


@dataclass(frozen=True)
class Reading:
    meter: int
    value: int


@dataclass(frozen=True)
class Paired:
    meter: int
    value: int
    limit: int


READINGS = sq.input("readings", Reading, shape=sq.Shape.INTERVAL)
LIMITS = sq.input("limits", Reading, shape=sq.Shape.INTERVAL)
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True))
READING_ITEMS: list[InputItem[Reading]] = [sq.Insert(7 * k, 7 * k + 3 + k % 11, Reading(k % 4, k % 13))
                                           for k in range(300)]
LIMIT_ITEMS: list[InputItem[Reading]] = [sq.Insert(20 * k, 20 * k + 1 + k % 37, Reading(k % 5, k % 7))
                                         for k in range(100)]
# the same with events that never end and one that spans the whole timeline
OPEN_LIMIT_ITEMS: list[InputItem[Reading]] = (
    [sq.Insert(0, 5000, Reading(1, 1)), sq.Insert(3, sq.INFINITY, Reading(2, 2))]
    + LIMIT_ITEMS + [sq.Insert(1990, sq.INFINITY, Reading(3, 3))])


def paired(r: Reading, l: Reading) -> Paired:
    return Paired(r.meter, r.value, l.value)


QUERIES: dict[str, tuple[sq.Stream[Any], list[InputItem[Reading]]]] = {
    "join on keys": (READINGS.join(LIMITS, lambda r, l: (r.meter == l.meter) & (r.value > l.value), paired),
                     LIMIT_ITEMS),
    "join on None": (READINGS.join(LIMITS, None, paired), LIMIT_ITEMS),
    "join with open events": (READINGS.join(LIMITS, lambda r, l: r.value >= l.value, paired), OPEN_LIMIT_ITEMS),
    "anti_join": (READINGS.anti_join(LIMITS, lambda r, l: r.meter == l.meter), OPEN_LIMIT_ITEMS),
    "anti_join on None": (READINGS.anti_join(LIMITS, None), LIMIT_ITEMS),
    "clip": (READINGS.clip(LIMITS, lambda r, l: r.meter != l.meter), OPEN_LIMIT_ITEMS),
    "group_apply join": (READINGS.group_apply(
        lambda r: r.meter % 2, lambda s: s.join(s.shift(sq.TICK * 3), None, paired),
        lambda key, p: Paired(key, p.value, p.limit)), LIMIT_ITEMS),
}


def binder(spark: SparkSession, limits: list[InputItem[Reading]]) -> sq.Binder:
    readings = frame(spark, Reading, sq.Shape.INTERVAL, READING_ITEMS, partitions=4)
    b = bind(sq.Binder(spark), READINGS, readings, sq.Shape.INTERVAL, SETTINGS)
    return bind(b, LIMITS, frame(spark, Reading, sq.Shape.INTERVAL, limits, partitions=3), sq.Shape.INTERVAL, SETTINGS)


@pytest.mark.parametrize("name", tiered(sorted(QUERIES), deep={"join with open events"}))
def test_multi_stream_plan_is_an_equi_join(spark: SparkSession, name: str) -> None:
    q, limits = QUERIES[name]
    plan = physical_plan(binder(spark, limits).to_dataframe(q))
    assert_distributed(plan, of=f"the {name} query")
    assert "Join" in plan


#: the default tier's time: these run in the deep tier (the other operators of their kinds stay)
DEEP = ("clip", "anti_join on None", "join with open events")


@pytest.mark.parametrize("name", tiered(sorted(QUERIES), deep=DEEP))
def test_multi_stream_over_partitions_equals_reference(spark: SparkSession, name: str) -> None:
    q, limits = QUERIES[name]
    reads = {"readings": sq.reference.ReferenceInput(READING_ITEMS, SETTINGS)}
    if name != "group_apply join":
        reads["limits"] = sq.reference.ReferenceInput(limits, SETTINGS)
        actual = binder(spark, limits).run(q)
    else:
        readings = frame(spark, Reading, sq.Shape.INTERVAL, READING_ITEMS, partitions=4)
        actual = bind(sq.Binder(spark), READINGS, readings, sq.Shape.INTERVAL, SETTINGS).run(q)
    expected = sq.reference.run(q, reads)
    assert len(expected.events) > 20
    assert actual == expected


def test_long_and_open_events_become_a_bounded_number_of_bucket_rows(spark: SparkSession) -> None:
    """An event spanning the whole timeline, or never ending, is home in at most two buckets of
    its own level and probes at most two per higher level of the other input."""
    lefts = [(0, 1), (5, 9), (0, 10**12), (3, INFINITY_MICROS), (10**12 - 5, 10**12 - 4)]
    rights = [(0, 2), (1, 2**20), (7, INFINITY_MICROS), (10**11, 10**11 + 2**30)]
    left = spark.createDataFrame(lefts, f"{START} long, {END} long")
    right = spark.createDataFrame(rights, f"{R_START} long, {R_END} long")
    buckets: TimeBuckets = time_buckets(left, right)
    assert buckets.horizon > 10**12 - 5
    places = meeting_places(F.col(START), F.col(END), buckets, buckets.right_levels, (0, 1), 0)
    counts = left.select(F.size(places).alias("n"))
    bound = 2 * (2 + len(buckets.right_levels))
    assert all(row["n"] <= bound for row in counts.collect())


def test_equality_keys_are_the_equalities_of_one_side_with_the_other_among_the_conjuncts() -> None:
    def keys_of(on: Any) -> list[tuple[str, str]]:
        node = READINGS.join(LIMITS, on, paired).node
        assert isinstance(node, Join)
        return [(a.show(), b.show()) for a, b in equality_keys(node.on)]

    assert keys_of(None) == []
    assert keys_of(lambda r, l: (r.meter == l.meter) & (r.value > l.value)) == [("r.meter", "l.meter")]
    # either way round, computed keys too; each conjunct of a nested conjunction
    assert keys_of(lambda r, l: (l.value == r.value % 3) & ((r.meter == l.meter) & (l.value > 0))) == [
        ("(r.value % 3)", "l.value"), ("r.meter", "l.meter")]
    # not keys: one side reads both payloads or none, a disjunction, a comparison
    assert keys_of(lambda r, l: (r.meter + l.meter == 3) & (r.value == 2)) == []
    assert keys_of(lambda r, l: (r.meter == l.meter) | (r.value == l.value)) == []
    assert keys_of(lambda r, l: r.meter <= l.meter) == []
