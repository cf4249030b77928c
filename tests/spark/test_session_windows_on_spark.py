"""Session windows on Spark: the hand-worked page views (``support.session_views``) give the events
worked out by hand; ungrouped sessions swept over many ranges of the timeline — sessions crossing
any number of range borders — equal the reference's; and the plans never collapse the data into
one partition or pair rows without an equi-join key (docs/architecture.md#rules-of-execution-on-spark)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Optional

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
import streamql.spark.windows.session as session_window
from streamql.events import InputItem
from streamql.time import from_micros
from support.frames import bind, frame
from support.seeds import every_event
from support.session_views import (ALL_USERS, ALL_USERS_FLUSHED, PER_USER, PER_USER_FLUSHED, PER_USER_PIECES,
                                   PER_USER_PIECES_FLUSHED, VIEWS, VIEWS_IN, View, m)
from support.depth import spark_examples
from support.must_release import check_release
from support.plans import assert_distributed, physical_plan
from support.streams import P, SPARK_EXAMPLES, inputs, side_by_side, us

FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))


def run(spark: SparkSession, q: sq.Stream[Any], items: list[InputItem[Any]],
        settings: Optional[sq.AdvanceTimeSettings]) -> sq.Result[Any]:
    df = frame(spark, View, sq.Shape.INTERVAL, items, partitions=3)
    return bind(sq.Binder(spark), VIEWS_IN, df, sq.Shape.INTERVAL, settings).run(q)


@pytest.mark.parametrize("q, expected", [(PER_USER, PER_USER_FLUSHED), (PER_USER_PIECES, PER_USER_PIECES_FLUSHED),
                                         (ALL_USERS, ALL_USERS_FLUSHED)], ids=["per user", "pieces", "all users"])
def test_hand_worked_sessions_on_spark(spark: SparkSession, q: sq.Stream[Any], expected: list[Any]) -> None:
    result = run(spark, q, VIEWS, FLUSH)
    assert result.events == expected
    assert result.final_cti == sq.INFINITY


def test_the_output_cti_is_read_from_the_sessions(spark: SparkSession) -> None:
    # CTI 12:10: bob's session [12:07, 12:15) is not stable, so the output CTI is its start
    result = run(spark, PER_USER, VIEWS[:7], every_event())
    assert result.events == PER_USER_FLUSHED[:2]
    assert result.final_cti == m(12, 7)


@dataclass(frozen=True)
class Stats:
    n: int
    total: Optional[int]
    low: Optional[int]


@settings(SPARK_EXAMPLES, max_examples=spark_examples(5))
@given(data=st.data())
def test_sessions_crossing_many_range_borders(spark: SparkSession, data: st.DataObject,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # about one range per distinct start: most sessions cross borders, some many of them
    monkeypatch.setattr(session_window, "RANGES_PER_CORE", 8)
    shape = data.draw(st.sampled_from([sq.Shape.POINT, sq.Shape.INTERVAL]), label="shape")
    items = data.draw(side_by_side(inputs(shape, open_ends=True, min_items=5)), label="items")
    gap = us(data.draw(st.integers(1, 25), label="gap"))
    longest = data.draw(st.one_of(st.none(), st.integers(1, 30)), label="max_duration")
    source = sq.input("in", P, shape)
    q = source.session_window(gap, None if longest is None else us(longest)).select(
        lambda w: Stats(w.count(), w.sum(lambda e: e.v), w.min(lambda e: e.o)))
    note(f"query tree: {q.node!r}")
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=data.draw(st.integers(1, 6), label="every"),
                                                         flush=data.draw(st.booleans(), label="flush")))
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput(items, at)})
    df = frame(spark, P, shape, items, partitions=data.draw(st.integers(1, 3), label="partitions"))
    assert bind(sq.Binder(spark), source, df, shape, at).run(q) == expected
    check_release(q, {"in": sq.reference.ReferenceInput(items, at)}, sq.Shape.INTERVAL, expected)


@dataclass(frozen=True)
class Sample:
    sensor: int
    value: int


@dataclass(frozen=True)
class Summary:
    n: int
    total: int


SAMPLES = sq.input("samples", Sample, shape=sq.Shape.INTERVAL)
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True))
# bursts of events, with gaps between bursts that only some gaps bridge
ITEMS: list[InputItem[Sample]] = [sq.Insert(7 * k + 40 * (k // 9), 7 * k + 40 * (k // 9) + 3 + k % 5, Sample(k % 4, k % 13))
                                  for k in range(300)]
PLANNED: dict[str, sq.Stream[Any]] = {
    "ungrouped": SAMPLES.session_window(timedelta(microseconds=20)).select(
        lambda w: Summary(w.count(), w.sum(lambda e: e.value))),
    "ungrouped pieces": SAMPLES.session_window(timedelta(microseconds=20), timedelta(microseconds=30)).select(
        lambda w: Summary(w.count(), w.max(lambda e: e.value))),
    "grouped": SAMPLES.group_by(lambda e: e.sensor).session_window(timedelta(microseconds=50)).select(
        lambda w: Summary(w.key, w.count())),
    "grouped pieces": SAMPLES.group_by(lambda e: e.sensor).session_window(
        timedelta(microseconds=50), timedelta(microseconds=100)).select(lambda w: Summary(w.key, w.count())),
}


def samples_binder(spark: SparkSession) -> sq.Binder:
    df = frame(spark, Sample, sq.Shape.INTERVAL, ITEMS, partitions=4)
    return bind(sq.Binder(spark), SAMPLES, df, sq.Shape.INTERVAL, SETTINGS)


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_session_plans_are_distributed(spark: SparkSession, name: str) -> None:
    q = PLANNED[name]
    out = samples_binder(spark).to_dataframe(q)
    assert_distributed(physical_plan(out), of=f"the {name} query")
    expected = sq.reference.run(q, {"samples": sq.reference.ReferenceInput(ITEMS, SETTINGS)})
    assert len(expected.events) > 10
    assert samples_binder(spark).run(q) == expected


@dataclass(frozen=True)
class Count:
    n: int


def test_an_operator_after_a_session_window_inside_group_apply(spark: SparkSession) -> None:
    source = sq.input("in", P, sq.Shape.POINT)
    q = source.group_apply(
        lambda e: e.k,
        lambda s: s.session_window(us(3)).select(lambda w: Count(w.count())).snapshot_window().select(
            lambda w: Count(w.count())),
        lambda k, c: P(k, c.n, "", None))
    # group 0: sessions [0, 5) and [17, 21); group 1: [2, 6) and [20, 24). At the CTI 21 group 0's
    # output CTI is 21, group 1's 20: in the reference group 0's snapshot [17, 21) is stable (its end
    # is a stable boundary at its group's CTI) and released; Spark carries each group's CTI too
    items: list[InputItem[P]] = [sq.Insert(t, t + 1, P(k, 0, "", None)) for t, k in [(0, 0), (2, 1), (1, 0), (17, 0), (20, 1)]]
    at = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=100))
    expected = sq.reference.run(q, {"in": sq.reference.ReferenceInput([*items, sq.Cti(21)], at)})
    assert (expected.events[-1].start, expected.events[-1].end) == (from_micros(17), from_micros(21))
    df = frame(spark, P, sq.Shape.POINT, [*items, sq.Cti(21)], partitions=1)
    assert bind(sq.Binder(spark), source, df, sq.Shape.POINT, at).run(q) == expected
