"""Distribution of windows (docs/architecture.md#rules-of-execution-on-spark): ungrouped hopping,
tumbling and count windows, a
group_apply and a grouped window whose select reads only its key never collapse the data into one
partition (no ``SinglePartition`` exchange) and never pair rows without an equi-join key, and their
results over a multi-partition input are the reference evaluator's."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem
from support.frames import bind, frame
from support.plans import assert_distributed, physical_plan


@dataclass(frozen=True)
class Sample:
    sensor: int
    value: int


@dataclass(frozen=True)
class Summary:
    n: int
    total: int
    high: int


@dataclass(frozen=True)
class SensorKey:
    sensor: int


@dataclass(frozen=True)
class SensorSummary:
    sensor: int
    n: int
    total: int


SOURCE = sq.input("samples", Sample, shape=sq.Shape.INTERVAL)
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True))
ITEMS: list[InputItem[Sample]] = [sq.Insert(7 * k, 7 * k + 3 + k % 11, Sample(k % 4, k % 13)) for k in range(300)]


def summary(w: sq.Window[Sample]) -> Summary:
    return Summary(w.count(), w.sum(lambda e: e.value), w.max(lambda e: e.value))


QUERIES: dict[str, sq.Stream[Any]] = {
    "tumbling": SOURCE.tumbling_window(timedelta(microseconds=50)).select(summary),
    "hopping": SOURCE.hopping_window(timedelta(microseconds=40), timedelta(microseconds=15)).select(summary),
    # hop > size leaves gaps between windows: events inside a gap belong to no window
    "gapped": SOURCE.hopping_window(timedelta(microseconds=5), timedelta(microseconds=17)).select(summary),
    "count": SOURCE.count_window(6).select(summary),
    # a select that reads no aggregate: the distinct (group, window) pairs, in the same one shuffle
    "key_only": SOURCE.group_by(lambda e: e.sensor).tumbling_window(timedelta(microseconds=50)).select(
        lambda w: SensorKey(w.key)),
    "group_apply": SOURCE.group_apply(
        lambda e: e.sensor, lambda s: s.count_window(3).select(summary),
        lambda sensor, s: SensorSummary(sensor, s.n, s.total)),
}


def binder(spark: SparkSession) -> sq.Binder:
    df = frame(spark, Sample, sq.Shape.INTERVAL, ITEMS, partitions=4)
    return bind(sq.Binder(spark), SOURCE, df, sq.Shape.INTERVAL, SETTINGS)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_window_plan_is_distributed(spark: SparkSession, name: str) -> None:
    assert_distributed(physical_plan(binder(spark).to_dataframe(QUERIES[name])), of=f"the {name} query")


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_window_over_partitions_equals_reference(spark: SparkSession, name: str) -> None:
    q = QUERIES[name]
    expected = sq.reference.run(q, {"samples": sq.reference.ReferenceInput(ITEMS, SETTINGS)})
    actual = binder(spark).run(q)
    assert len(expected.events) > 20
    assert actual == expected
