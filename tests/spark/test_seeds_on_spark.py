"""The hand-worked seed examples on Spark: the power-meter tables of seed 000 (StreamInsight: Event
Structure) and the CTI examples of seed 001 (StreamInsight: Advancing Application Time), bound
as DataFrames with timestamp columns and a kind column, run with ``Binder.run``.

Every case asserts the events worked out by hand (the same as tests/reference/test_seeds.py)
and that Spark's whole Result equals ``sq.reference.run`` on the same items.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Optional, Sequence

from pyspark.sql import DataFrame, SparkSession

import streamql as sq
from streamql.events import InputItem
from streamql.query.nodes import Input

from support.seeds import (INF, INTERVAL_TABLE, METER_INTERVALS, METER_POINTS, POINT_TABLE, T1, T2, T3, T4,
                           TICK, PowerReading, Watts, every_event, t)


def meter_table(spark: SparkSession, items: Sequence[InputItem[PowerReading]], partitions: int) -> DataFrame:
    """The seed's table as a DataFrame: kind, start, end (UTC timestamps), consumption, in
    arrival order across ``partitions`` partitions."""
    rows: list[tuple[Any, ...]] = []
    for item in items:
        if isinstance(item, sq.Cti):
            rows.append(("CTI", item.time, None, None))
        else:
            assert isinstance(item, sq.Insert)
            rows.append(("INSERT", item.start, item.end, item.payload.consumption))
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions),
                                 "kind string, start timestamp, end timestamp, consumption long")


def run(spark: SparkSession, query: sq.Stream[Any], source: sq.Stream[PowerReading],
        items: Sequence[InputItem[PowerReading]], settings: Optional[sq.AdvanceTimeSettings], *,
        output: sq.Shape = sq.Shape.INTERVAL, partitions: int = 2) -> sq.Result[Any]:
    """Runs ``query`` on Spark and in the reference evaluator; they must agree."""
    df = meter_table(spark, items, partitions)
    assert isinstance(source.node, Input)
    point = source.node.shape is sq.Shape.POINT
    binder = sq.Binder(spark).bind(source, df, start="start", end=None if point else "end", kind="kind",
                                   advance_time=settings)
    result = binder.run(query, output=output)
    assert result == sq.reference.run(query, {"meter": sq.reference.ReferenceInput(items, settings)}, output=output)
    return result


# --- seed 000: event models ---------------------------------------------------------------------


def test_interval_table_flushed(spark: SparkSession) -> None:
    result = run(spark, METER_INTERVALS, METER_INTERVALS, INTERVAL_TABLE, every_event(flush=True))
    # the final CTI at INFINITY releases the three intervals exactly as given
    assert result.events == [
        sq.Event(T1, T2, PowerReading(100)),
        sq.Event(T2, T3, PowerReading(200)),
        sq.Event(T3, T4, PowerReading(100)),
    ]
    assert (result.dropped, result.adjusted, result.bad_rows, result.final_cti) == (0, 0, 0, INF)


def test_interval_table_filtered_and_projected(spark: SparkSession) -> None:
    query = METER_INTERVALS.where(lambda e: e.consumption > 150).select(lambda e: Watts(e.consumption * 1.5))
    result = run(spark, query, METER_INTERVALS, INTERVAL_TABLE, every_event(flush=True))
    # only the 200 reading, over [09:14:09.270, 09:14:22.255); 200 * 1.5 = 300.0
    assert result.events == [sq.Event(T2, T3, Watts(300.0))]


def test_interval_table_without_flush_the_last_interval_waits(spark: SparkSession) -> None:
    result = run(spark, METER_INTERVALS, METER_INTERVALS, INTERVAL_TABLE, every_event())
    # CTIs at each start; the last interval starts at the final CTI T3: not released
    assert result.events == [sq.Event(T1, T2, PowerReading(100)), sq.Event(T2, T3, PowerReading(200))]
    assert result.final_cti == T3


def test_point_table_with_a_cti_one_tick_after_each_point(spark: SparkSession) -> None:
    result = run(spark, METER_POINTS, METER_POINTS, POINT_TABLE, every_event(delay=-TICK), partitions=3)
    # "the CTIs must be timestamped immediately after the point events": all three committed
    assert result.events == [
        sq.Event(T1, T1 + TICK, PowerReading(100)),
        sq.Event(T2, T2 + TICK, PowerReading(200)),
        sq.Event(T3, T3 + TICK, PowerReading(100)),
    ]
    assert result.final_cti == T3 + TICK


def test_intervals_as_points_are_the_point_table(spark: SparkSession) -> None:
    expected = [sq.Event(T1, T1 + TICK, PowerReading(100)), sq.Event(T2, T2 + TICK, PowerReading(200)),
                sq.Event(T3, T3 + TICK, PowerReading(100))]
    as_points = run(spark, METER_INTERVALS.to_point(), METER_INTERVALS, INTERVAL_TABLE, every_event(flush=True))
    point_output = run(spark, METER_INTERVALS, METER_INTERVALS, INTERVAL_TABLE, every_event(flush=True),
                       output=sq.Shape.POINT)
    assert as_points.events == point_output.events == expected


def test_point_readings_extended_to_intervals(spark: SparkSession) -> None:
    query = METER_POINTS.alter_duration(timedelta(seconds=10))
    result = run(spark, query, METER_POINTS, POINT_TABLE, every_event(flush=True))
    # each reading counts for 10 s
    assert result.events == [
        sq.Event(T1, t(9, 13, 43, 317), PowerReading(100)),
        sq.Event(T2, t(9, 14, 19, 270), PowerReading(200)),
        sq.Event(T3, t(9, 14, 32, 255), PowerReading(100)),
    ]


# --- seed 001: advancing application time ----------------------------------------------------------


def test_delay_zero_the_last_point_waits_for_the_next_cti(spark: SparkSession) -> None:
    # "frequency 1 and delay 0 ... the very last point event will only be committed with the next CTI"
    result = run(spark, METER_POINTS, METER_POINTS, POINT_TABLE, every_event())
    assert result.events == [sq.Event(T1, T1 + TICK, PowerReading(100)), sq.Event(T2, T2 + TICK, PowerReading(200))]
    assert result.final_cti == T3
    later = run(spark, METER_POINTS, METER_POINTS, [*POINT_TABLE, sq.Cti(T3 + TICK)], every_event())
    assert later.events[-1] == sq.Event(T3, T3 + TICK, PowerReading(100))
    assert len(later.events) == 3 and later.final_cti == T3 + TICK


def test_flush_releases_everything(spark: SparkSession) -> None:
    # new AdvanceTimeGenerationSettings(1, TimeSpan.FromTicks(-1), true) commits every point as it
    # comes (test_point_table_with_a_cti_one_tick_after_each_point); the flag adds "a CTI with
    # infinite time" when the query shuts down. With a delay of an hour every generated CTI lies
    # before T1: only the flush releases the readings.
    flushed = run(spark, METER_POINTS.alter_duration(timedelta(minutes=5)), METER_POINTS, POINT_TABLE,
                  every_event(delay=timedelta(hours=1), flush=True))
    assert flushed.events == [
        sq.Event(T1, T1 + timedelta(minutes=5), PowerReading(100)),
        sq.Event(T2, T2 + timedelta(minutes=5), PowerReading(200)),
        sq.Event(T3, T3 + timedelta(minutes=5), PowerReading(100)),
    ]
    assert flushed.final_cti == INF
    without = run(spark, METER_POINTS, METER_POINTS, POINT_TABLE, every_event(delay=timedelta(hours=1)))
    assert without.events == [] and without.final_cti == T3 - timedelta(hours=1)


def _ten_readings() -> list[InputItem[PowerReading]]:
    base = t(12, 0, 0, 0)
    readings: list[InputItem[PowerReading]] = [
        sq.Insert(base + timedelta(seconds=i), base + timedelta(seconds=i) + TICK, PowerReading(i)) for i in range(10)]
    # after the 10th event (at 9 s) the CTI is 9 s - 5 s = 4 s
    late_ok = base + timedelta(seconds=4.5)
    too_late = base + timedelta(seconds=3.9)
    return [*readings, sq.Insert(late_ok, late_ok + TICK, PowerReading(45)),
            sq.Insert(too_late, too_late + TICK, PowerReading(39))]


def test_ten_events_five_seconds_grace_period(spark: SparkSession) -> None:
    # new AdvanceTimeGenerationSettings(10, TimeSpan.FromSeconds(5), true)
    settings = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=10, delay=timedelta(seconds=5), flush=True))
    result = run(spark, METER_POINTS, METER_POINTS, _ten_readings(), settings, partitions=3)
    # 4.5 s is within the grace period; 3.9 s violates CTI 4 s and is dropped
    assert [e.payload.consumption for e in result.events] == [0, 1, 2, 3, 4, 45, 5, 6, 7, 8, 9]
    assert (result.dropped, result.adjusted, result.final_cti) == (1, 0, INF)
    no_flush = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=10, delay=timedelta(seconds=5)))
    partial = run(spark, METER_POINTS, METER_POINTS, _ten_readings(), no_flush, partitions=3)
    assert [e.payload.consumption for e in partial.events] == [0, 1, 2, 3]
    assert partial.final_cti == t(12, 0, 4, 0)
    assert partial.dropped == 1


# Seed 001, "CTI Violation Policies": after a CTI at T2, a late interval that overlaps the CTI
# and one that lies wholly before it
LATE_OVERLAPPING = sq.Insert(t(9, 13, 50, 0), t(9, 14, 15, 0), PowerReading(150))
LATE_BEFORE = sq.Insert(t(9, 13, 40, 0), t(9, 13, 55, 0), PowerReading(120))
WITH_LATE: list[InputItem[PowerReading]] = [INTERVAL_TABLE[0], sq.Cti(T2), LATE_OVERLAPPING, LATE_BEFORE,
                                            *INTERVAL_TABLE[1:]]


def _explicit_ctis(policy: sq.AdvanceTimePolicy) -> sq.AdvanceTimeSettings:
    # the CTIs come from the CTI row; generation only adds the shut-down CTI at INFINITY
    return sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1000, flush=True), policy=policy)


def test_drop_policy(spark: SparkSession) -> None:
    result = run(spark, METER_INTERVALS, METER_INTERVALS, WITH_LATE, _explicit_ctis(sq.AdvanceTimePolicy.DROP))
    # "events that violate the inserted CTI are dropped": both late intervals
    assert result.events == [
        sq.Event(T1, T2, PowerReading(100)),
        sq.Event(T2, T3, PowerReading(200)),
        sq.Event(T3, T4, PowerReading(100)),
    ]
    assert (result.dropped, result.adjusted) == (2, 0)


def test_adjust_policy(spark: SparkSession) -> None:
    result = run(spark, METER_INTERVALS, METER_INTERVALS, WITH_LATE, _explicit_ctis(sq.AdvanceTimePolicy.ADJUST))
    # [09:13:50, 09:14:15) moves to [T2, 09:14:15); [09:13:40, 09:13:55) lies before the CTI: dropped
    assert result.events == [
        sq.Event(T1, T2, PowerReading(100)),
        sq.Event(T2, t(9, 14, 15, 0), PowerReading(150)),
        sq.Event(T2, T3, PowerReading(200)),
        sq.Event(T3, T4, PowerReading(100)),
    ]
    assert (result.dropped, result.adjusted) == (1, 1)


def test_shift_and_alter_lifetime_move_the_ctis(spark: SparkSession) -> None:
    # "ShiftEventTime() and AlterEventLifeTime() ... the same transformation will be applied to CTIs"
    minute = timedelta(minutes=1)
    shifted = run(spark, METER_INTERVALS.shift(minute), METER_INTERVALS, INTERVAL_TABLE, every_event())
    assert shifted.final_cti == T3 + minute
    assert shifted.events == [sq.Event(T1 + minute, T2 + minute, PowerReading(100)),
                              sq.Event(T2 + minute, T3 + minute, PowerReading(200))]
    altered = run(spark, METER_INTERVALS.alter_lifetime(minute, timedelta(seconds=1)), METER_INTERVALS,
                  INTERVAL_TABLE, every_event())
    assert altered.final_cti == T3 + minute
    assert altered.events == [sq.Event(T1 + minute, T1 + minute + timedelta(seconds=1), PowerReading(100)),
                              sq.Event(T2 + minute, T2 + minute + timedelta(seconds=1), PowerReading(200))]
