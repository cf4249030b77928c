"""Snapshot windows on Spark (``streamql/spark/windows/snapshot.py``): hand-worked examples from the
StreamInsight snapshot page (seed 002), grouping, min/max through the segment tree, all-null
values, the stability of a boundary at the CTI, ungrouped inputs swept over several ranges of the
timeline and stitched at their borders, a property test against the reference evaluator, and the
physical plan (distributed: no single partition, no cartesian product).

Floating-point values are small multiples of 0.25, so that running sums are exact and results
compare equal to the reference's left-to-right sums."""
from __future__ import annotations

import math
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Callable, Optional, Sequence, cast
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import streamql as sq
from streamql.spark.windows import snapshot
from streamql.time import to_micros
from support.depth import spark_examples, tiered
from support.frames import bind, frame
from support.must_release import check_release
from support.plans import assert_distributed, physical_plan
from support.streams import side_by_side

FLUSH = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))
SOURCE = "readings"


@dataclass(frozen=True)
class Reading:
    k: Optional[int]
    v: Optional[float]


@dataclass(frozen=True)
class Summary:
    n: int
    total: Optional[float]
    low: Optional[float]
    high: Optional[float]


@dataclass(frozen=True)
class Mean:
    mean: Optional[float]


@dataclass(frozen=True)
class KeyedMean:
    key: Optional[int]
    n: int
    mean: Optional[float]
    high: Optional[float]


@dataclass(frozen=True)
class Clipped:
    total: Optional[float]
    covered: Optional[int]


def covered_micros() -> sq.UserAggregate[Optional[float], int, int]:
    """A user aggregate: the summed lifetimes of a window's members, as the window clips them.

    The class is local so that Spark's workers receive it by value: they cannot import this
    module (its ``support`` imports are not on their path)."""

    class CoveredMicros(sq.UserAggregate[Optional[float], int, int]):
        result_type = int

        def zero(self) -> int:
            return 0

        def add(self, acc: int, value: Optional[float], start: datetime, end: datetime) -> int:
            return acc + (end - start) // sq.TICK

        def result(self, acc: int) -> int:
            return acc

    return CoveredMicros()


def value(e: Reading) -> float:
    """A reading's value, which may be null: the aggregates skip nulls, the static types say float."""
    return cast(float, e.v)


def summary(w: sq.Window[Reading]) -> Summary:
    return Summary(w.count(), w.sum(value), w.min(value), w.max(value))


def run(spark: SparkSession, q: sq.Stream[Any], source: sq.Stream[Reading], items: Sequence[Any],
        at: sq.AdvanceTimeSettings | None = FLUSH, *, shape: sq.Shape = sq.Shape.INTERVAL,
        output: sq.Shape = sq.Shape.INTERVAL, partitions: int = 3) -> sq.Result[Any]:
    """The Spark Result of ``q``, after checking that it equals the reference evaluator's."""
    expected = sq.reference.run(q, {SOURCE: sq.reference.ReferenceInput(items, at)}, output=output)
    df = frame(spark, Reading, shape, items, partitions=partitions)
    actual = bind(sq.Binder(spark), source, df, shape, at).run(q, output=output)
    assert actual == expected
    check_release(q, {SOURCE: sq.reference.ReferenceInput(items, at)}, output, expected)
    return actual


def spans(result: sq.Result[Any]) -> list[tuple[int, int, Any]]:
    """The released events as (start, end) in microseconds with their payloads."""
    return [(to_micros(e.start), to_micros(e.end), e.payload) for e in result.events]


def interval(start: int, end: int, k: Optional[int], v: Optional[float]) -> sq.Insert[Reading]:
    return sq.Insert(start, end, Reading(k, v))


# --- hand-worked examples -------------------------------------------------------------------------

def test_three_overlapping_events_seed_002(spark: SparkSession) -> None:
    """The seed's e1, e2, e3: the endpoints cut the timeline into five windows, each aggregating
    the events alive in it, with lifetimes clipped to the window (the user aggregate sees 10 µs
    per member, never e2's whole 30 µs)."""
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    q = source.snapshot_window().select(
        lambda w: Clipped(w.sum(value), w.aggregate(covered_micros(), value)))
    items = [interval(0, 20, 0, 1.0), interval(10, 40, 0, 2.0), interval(30, 50, 0, 4.0)]
    assert spans(run(spark, q, source, items)) == [
        (0, 10, Clipped(1.0, 10)),   # e1
        (10, 20, Clipped(3.0, 20)),  # e1, e2
        (20, 30, Clipped(2.0, 10)),  # e2
        (30, 40, Clipped(6.0, 20)),  # e2, e3
        (40, 50, Clipped(4.0, 10)),  # e3
    ]


def test_sliding_average_over_points(spark: SparkSession) -> None:
    """The seed's sliding window: points stretched to three minutes, then a snapshot average. Equal
    neighbouring values stay separate windows (1:00–2:00 and 2:00–3:00 both average 2.0)."""
    minute = 60_000_000
    source = sq.input(SOURCE, Reading, sq.Shape.POINT)
    q = source.alter_duration(timedelta(minutes=3)).snapshot_window().select(lambda w: Mean(w.avg(value)))
    items = [sq.Insert(m * minute, m * minute + 1, Reading(None, v)) for m, v in [(0, 1.0), (1, 3.0), (2, 2.0), (5, 1.0)]]
    assert spans(run(spark, q, source, items, shape=sq.Shape.POINT)) == [
        (0, minute, Mean(1.0)), (minute, 2 * minute, Mean(2.0)), (2 * minute, 3 * minute, Mean(2.0)),
        (3 * minute, 4 * minute, Mean(2.5)), (4 * minute, 5 * minute, Mean(2.0)), (5 * minute, 8 * minute, Mean(1.0)),
    ]


def test_grouped_snapshot_with_a_null_key(spark: SparkSession) -> None:
    """Each key sweeps its own endpoints; the null key is a group of its own."""
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    q = source.group_by(lambda e: e.k).snapshot_window().select(
        lambda w: KeyedMean(w.key, w.count(), w.avg(value), w.max(value)))
    items = [interval(0, 10, 1, 1.0), interval(0, 10, 2, 8.0), interval(2, 4, None, 0.5),
             interval(3, 6, None, None), interval(5, 15, 1, 2.0)]
    assert sorted(spans(run(spark, q, source, items)), key=lambda s: (str(s[2].key), s[0])) == [
        (0, 5, KeyedMean(1, 1, 1.0, 1.0)), (5, 10, KeyedMean(1, 2, 1.5, 2.0)), (10, 15, KeyedMean(1, 1, 2.0, 2.0)),
        (0, 10, KeyedMean(2, 1, 8.0, 8.0)),
        (2, 3, KeyedMean(None, 1, 0.5, 0.5)), (3, 4, KeyedMean(None, 2, 0.5, 0.5)), (4, 6, KeyedMean(None, 1, None, None)),
    ]


def test_min_max_with_nested_overlaps_and_long_events(spark: SparkSession) -> None:
    """A long event spanning every interval, nested events, and many short ones: min/max come
    from the segment-tree blocks covering each interval."""
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    q = source.snapshot_window().select(summary)
    items = [interval(0, 100, 0, 50.0), interval(10, 90, 0, 70.0), interval(20, 30, 0, 60.0),
             interval(25, 80, 0, -5.0), interval(40, 41, 0, 99.0)]
    items += [interval(t, t + 3, 0, float(t % 7)) for t in range(42, 75, 4)]
    result = spans(run(spark, q, source, items))
    by_start = {start: (end, payload) for start, end, payload in result}
    assert by_start[0] == (10, Summary(1, 50.0, 50.0, 50.0))
    assert by_start[20] == (25, Summary(3, 180.0, 50.0, 70.0))
    assert by_start[40] == (41, Summary(4, 214.0, -5.0, 99.0))
    assert by_start[80] == (90, Summary(2, 120.0, 50.0, 70.0))
    assert len(result) == len({s for s, _, _ in result}) == 27


def test_all_null_values(spark: SparkSession) -> None:
    """sum, avg, min and max skip nulls and are null where every alive value is null; count counts."""
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    q = source.snapshot_window().select(
        lambda w: KeyedMean(None, w.count(), w.avg(value), w.min(value)))
    items = [interval(0, 10, 0, None), interval(5, 15, 0, None), interval(12, 20, 0, 3.0)]
    assert spans(run(spark, q, source, items)) == [
        (0, 5, KeyedMean(None, 1, None, None)), (5, 10, KeyedMean(None, 2, None, None)),
        (10, 12, KeyedMean(None, 1, None, None)), (12, 15, KeyedMean(None, 2, 3.0, 3.0)),
        (15, 20, KeyedMean(None, 1, 3.0, 3.0)),
    ]


def test_boundary_at_the_cti_made_by_a_stable_end(spark: SparkSession) -> None:
    """With the CTI at 10, [5, 10) is stable: the boundary at 10 is the end of an accepted event."""
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    q = source.snapshot_window().select(summary)
    items = [interval(0, 10, 0, 1.0), interval(5, 20, 0, 2.0), sq.Cti(10)]
    assert spans(run(spark, q, source, items, at=None)) == [
        (0, 5, Summary(1, 1.0, 1.0, 1.0)), (5, 10, Summary(2, 3.0, 1.0, 2.0))]


@pytest.mark.parametrize("drop_level_one", tiered([False, True], deep={"True"}))
def test_boundary_at_the_cti_made_only_by_an_unstable_start(spark: SparkSession, drop_level_one: bool) -> None:
    """Two snapshots: the first (per key) outputs [10, 15) with an unstable start (10 is not before
    the CTI 10). In the second, with [5, 10) of key 2 filtered out, only that unstable start makes
    the boundary at 10, so [0, 10) is not stable and not released as an interval — but its start
    and payload are, so point output releases it. With [5, 10) kept, its stable end makes the
    boundary and [5, 10) is released."""
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    level_one = source.group_by(lambda e: e.k).snapshot_window().select(
        lambda w: Reading(w.key, w.sum(value)))
    if drop_level_one:
        level_one = level_one.where(lambda e: e.v != 7.0)
    q = level_one.snapshot_window().select(summary)
    items = [interval(0, 20, 1, 1.0), interval(5, 10, 2, 7.0), interval(10, 15, 2, 2.0), sq.Cti(10)]
    released = spans(run(spark, q, source, items, at=None))
    points = spans(run(spark, q, source, items, at=None, output=sq.Shape.POINT))
    if drop_level_one:
        assert released == []
        assert points == [(0, 1, Summary(1, 1.0, 1.0, 1.0))]
    else:
        assert released == [(0, 5, Summary(1, 1.0, 1.0, 1.0)), (5, 10, Summary(2, 8.0, 1.0, 7.0))]


def test_ranges_stitched_at_borders_that_are_not_endpoints(spark: SparkSession) -> None:
    """Ungrouped, over ranges cut at borders chosen here: 5 and 25 cut intervals artificially, 60
    and 70 lie inside [50, 100) where no event starts or ends (a range with no real endpoint at
    all), 10 is a start and 20 an end. Every cut interval is merged back: the result is the single
    sweep's, and [50, 100) stays one interval."""
    borders = [5, 10, 20, 25, 60, 70, 200]
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    q = source.snapshot_window().select(summary)
    items = [interval(0, 100, 0, 1.0), interval(10, 20, 0, 2.0), interval(30, 35, 0, 4.0),
             interval(30, 50, 0, 0.25), interval(50, 120, 0, 8.0)]
    with mock.patch.object(snapshot, "range_borders", return_value=borders) as chosen:
        result = spans(run(spark, q, source, items))
    assert chosen.called
    assert result == [
        (0, 10, Summary(1, 1.0, 1.0, 1.0)), (10, 20, Summary(2, 3.0, 1.0, 2.0)), (20, 30, Summary(1, 1.0, 1.0, 1.0)),
        (30, 35, Summary(3, 5.25, 0.25, 4.0)), (35, 50, Summary(2, 1.25, 0.25, 1.0)),
        (50, 100, Summary(2, 9.0, 1.0, 8.0)), (100, 120, Summary(1, 8.0, 8.0, 8.0)),
    ]


def test_ranges_with_a_boundary_at_the_cti_on_a_border(spark: SparkSession) -> None:
    """The CTI (40) is a border and an endpoint; the stability of [30, 40) is read in the range
    before the border, from the copy of the event end lying on it."""
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    q = source.snapshot_window().select(summary)
    items = [interval(0, 40, 0, 1.0), interval(30, 60, 0, 2.0), interval(40, 45, 0, 4.0), sq.Cti(40)]
    with mock.patch.object(snapshot, "range_borders", return_value=[35, 40, 50]):
        assert spans(run(spark, q, source, items, at=None)) == [
            (0, 30, Summary(1, 1.0, 1.0, 1.0)), (30, 40, Summary(2, 3.0, 1.0, 2.0))]


def test_sums_keep_their_type_and_special_floats_stay_local(spark: SparkSession) -> None:
    """A decimal sum stays a decimal; NaN and infinities affect only the intervals their events are
    alive in (a running sum alone could never subtract them again)."""

    @dataclass(frozen=True)
    class Money:
        k: int
        amount: Decimal
        x: float

    @dataclass(frozen=True)
    class Totals:
        amount: Optional[Decimal]
        x: Optional[float]

    source = sq.input("money", Money, sq.Shape.INTERVAL)
    q = source.snapshot_window().select(lambda w: Totals(w.sum(lambda e: e.amount), w.sum(lambda e: e.x)))
    items = [sq.Insert(0, 10, Money(0, Decimal("0.1"), 1.0)), sq.Insert(2, 4, Money(0, Decimal("0.2"), math.nan)),
             sq.Insert(5, 6, Money(0, Decimal("0.3"), math.inf)), sq.Insert(5, 7, Money(0, Decimal("0.4"), -math.inf)),
             sq.Insert(8, 9, Money(0, Decimal("1E-18"), 2.0))]
    df = frame(spark, Money, sq.Shape.INTERVAL, items)
    actual = bind(sq.Binder(spark), source, df, sq.Shape.INTERVAL, FLUSH).run(q)
    expected = [(0, 2, Decimal("0.1"), 1.0), (2, 4, Decimal("0.3"), math.nan), (4, 5, Decimal("0.1"), 1.0),
                (5, 6, Decimal("0.8"), math.nan), (6, 7, Decimal("0.5"), -math.inf), (7, 8, Decimal("0.1"), 1.0),
                (8, 9, Decimal("0.100000000000000001"), 3.0), (9, 10, Decimal("0.1"), 1.0)]
    got = [(s, e, p.amount, p.x) for s, e, p in spans(actual)]
    assert [g[:3] for g in got] == [x[:3] for x in expected]
    for (_, _, _, x), (_, _, _, want) in zip(got, expected):
        assert x == want or (math.isnan(x) and math.isnan(want))


def test_min_max_of_ordered_types_and_a_user_aggregate_over_times(spark: SparkSession) -> None:
    """min and max of strings, datetimes and durations, and a user aggregate reading datetimes,
    over open events (never ending: their last interval reaches INFINITY) swept over ranges."""
    epoch = datetime(2024, 1, 1, tzinfo=timezone.utc)

    @dataclass(frozen=True)
    class Visit:
        who: str
        at: datetime
        took: timedelta

    @dataclass(frozen=True)
    class Span:
        first: Optional[str]
        last: Optional[str]
        earliest: Optional[datetime]
        longest: Optional[timedelta]
        latest: Optional[datetime]

    def latest() -> sq.UserAggregate[datetime, Optional[datetime], Optional[datetime]]:
        class Latest(sq.UserAggregate[datetime, Optional[datetime], Optional[datetime]]):
            result_type = Optional[datetime]

            def zero(self) -> Optional[datetime]:
                return None

            def add(self, acc: Optional[datetime], value: datetime, start: datetime, end: datetime) -> Optional[datetime]:
                return value if acc is None or value > acc else acc

            def result(self, acc: Optional[datetime]) -> Optional[datetime]:
                return acc
        return Latest()

    source = sq.input("visits", Visit, sq.Shape.INTERVAL)
    q = source.snapshot_window().select(lambda w: Span(
        w.min(lambda e: e.who), w.max(lambda e: e.who), w.min(lambda e: e.at), w.max(lambda e: e.took),
        w.aggregate(latest(), lambda e: e.at)))
    items = [sq.Insert(0, sq.INFINITY, Visit("mia", epoch, timedelta(minutes=5))),
             sq.Insert(10, 30, Visit("ann", epoch + timedelta(days=1), timedelta(seconds=1))),
             sq.Insert(20, sq.INFINITY, Visit("zoe", epoch - timedelta(days=1), timedelta(hours=1))),
             sq.Insert(25, 26, Visit("bob", epoch + timedelta(days=2), timedelta(0)))]
    expected = sq.reference.run(q, {"visits": sq.reference.ReferenceInput(items, FLUSH)})
    df = frame(spark, Visit, sq.Shape.INTERVAL, items)
    with mock.patch.object(snapshot, "range_borders", return_value=[5, 22, 28, 40]):
        actual = bind(sq.Binder(spark), source, df, sq.Shape.INTERVAL, FLUSH).run(q)
    assert actual == expected
    assert [(to_micros(e.start), to_micros(e.end)) for e in actual.events] == [
        (0, 10), (10, 20), (20, 25), (25, 26), (26, 30), (30, to_micros(sq.INFINITY))]
    assert actual.events[3].payload == Span("ann", "zoe", epoch - timedelta(days=1), timedelta(hours=1),
                                            epoch + timedelta(days=2))


# --- property test against the reference ------------------------------------------------------------

SELECTS: list[Callable[[sq.Window[Reading]], Any]] = [
    summary,
    lambda w: Mean(w.avg(value)),
    lambda w: Clipped(w.sum(value), w.aggregate(covered_micros(), value)),
]
KEYED_SELECTS: list[Callable[[sq.GroupWindow[Optional[int], Reading]], Any]] = [
    lambda w: KeyedMean(w.key, w.count(), w.avg(value), w.max(value)),
    lambda w: Summary(w.count(), w.sum(value), w.min(value), w.max(lambda e: value(e) + 1.0)),
]

readings = st.builds(Reading, st.one_of(st.none(), st.integers(0, 2)),
                     st.one_of(st.none(), st.integers(-8, 8).map(lambda n: n / 4)))


@st.composite
def interval_items(draw: st.DrawFn) -> list[Any]:
    items: list[Any] = []
    for _ in range(draw(st.integers(0, 14))):
        if draw(st.integers(0, 9)) == 0:
            items.append(sq.Cti(draw(st.integers(0, 60))))
            continue
        start = draw(st.integers(0, 50))
        length = draw(st.sampled_from([1, 2, 5, 10, 30, None]))  # None: an event that never ends
        items.append(sq.Insert(start, sq.INFINITY if length is None else start + length, draw(readings)))
    return items


@st.composite
def every_events(draw: st.DrawFn) -> sq.AdvanceTimeSettings:
    generation = sq.AdvanceTimeGeneration(every_events=draw(st.integers(1, 4)),
                                          delay=timedelta(microseconds=draw(st.sampled_from([0, 3]))),
                                          flush=draw(st.booleans()))
    return sq.AdvanceTimeSettings(generation=generation, policy=draw(st.sampled_from(list(sq.AdvanceTimePolicy))))


@settings(max_examples=spark_examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_spark_equals_reference(spark: SparkSession, data: st.DataObject) -> None:
    items = data.draw(side_by_side(interval_items()), label="items")
    at = data.draw(every_events(), label="settings")
    grouped = data.draw(st.booleans(), label="grouped")
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    if grouped:
        q = source.group_by(lambda e: e.k).snapshot_window().select(data.draw(st.sampled_from(KEYED_SELECTS)))
    else:
        q = source.snapshot_window().select(data.draw(st.sampled_from(SELECTS)))
    output = data.draw(st.sampled_from([sq.Shape.INTERVAL, sq.Shape.EDGE]), label="output")
    # ungrouped sweeps run over ranges: at the quantiles of the starts, or at random borders
    borders = data.draw(st.one_of(st.none(), st.lists(st.integers(-5, 70), max_size=6)), label="borders")
    with _borders(borders):
        run(spark, q, source, items, at, output=output, partitions=data.draw(st.integers(1, 3)))


def _borders(borders: list[int] | None) -> AbstractContextManager[Any]:
    return nullcontext() if borders is None else mock.patch.object(snapshot, "range_borders", return_value=borders)


# --- the plan --------------------------------------------------------------------------------------

@pytest.mark.parametrize("grouped", [False, True])
def test_plan_is_distributed(spark: SparkSession, grouped: bool) -> None:
    """No single-partition exchange and no cartesian product, for an ungrouped snapshot over a
    multi-partition input (its sweep is partitioned by range) as for a grouped one."""
    source = sq.input(SOURCE, Reading, sq.Shape.INTERVAL)
    windowed = source.group_by(lambda e: e.k).snapshot_window() if grouped else source.snapshot_window()
    q = windowed.select(summary)
    items = [interval(t, t + 7 + t % 5, t % 3, float(t % 4)) for t in range(0, 200, 3)]
    df = frame(spark, Reading, sq.Shape.INTERVAL, items, partitions=4)
    out = bind(sq.Binder(spark), source, df, sq.Shape.INTERVAL, FLUSH).to_dataframe(q)
    plan = physical_plan(out)
    assert_distributed(plan)
    assert "hashpartitioning(_sq_part" in plan
