"""Windows, grouping and a user-defined aggregate on Spark.

Three inputs, five queries (see docs/windows.md, docs/grouping.md, docs/user-aggregates.md):

- power-meter readings (point events of two meters, a CTI at every reading):
  - the sliding 3-minute average per meter: ``alter_duration`` + a grouped snapshot window;
  - the load every 2 minutes over the last 4: a hopping window;
  - the mean and peak of every 3 consecutive readings of each meter: a grouped count window;
- coloured rows (SQLstream's "Rowtimes, Streaming Data, and Rowtime Bounds"): hourly counts per
  colour with tumbling windows; every row is a CTI at its own time, and the source punctuates at
  5:00 with a CTI row so that the hour 4:00-5:00 is released at once, not when the next row comes
  at 6:15;
- tank levels (intervals): the time-weighted average level per tank every 10 minutes, a
  user-defined aggregate that weighs each level by how long it holds within the window.

Every query runs on local Spark and in the reference evaluator; the script checks that both
release the same events.

Run it with ``.venv/bin/python examples/windows.py`` (Java 17+ must be installed).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional

from pyspark.sql import DataFrame, SparkSession

import streamql as sq
from streamql.events import InputItem

UTC = timezone.utc


def at(hh: int, mm: int, ss: int = 0) -> datetime:
    """A time on 2024-05-01, UTC (application times are always UTC instants)."""
    return datetime(2024, 5, 1, hh, mm, ss, tzinfo=UTC)


# --- power-meter readings ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float  # watts


@dataclass(frozen=True)
class MeterAverage:
    meter: str
    average: float


@dataclass(frozen=True)
class Load:
    readings: int
    total_kw: float
    peak: float


@dataclass(frozen=True)
class Triple:
    meter: str
    mean: float
    peak: float


# (arrival, start, meter, watts), in arrival order
READINGS: list[tuple[int, datetime, str, float]] = [
    (0, at(9, 0, 0), "m1", 100.0),
    (1, at(9, 0, 30), "m2", 250.0),
    (2, at(9, 1, 0), "m1", 200.0),
    (3, at(9, 2, 30), "m1", 60.0),
    (4, at(9, 4, 0), "m2", 270.0),
    (5, at(9, 4, 40), "m2", 260.0),
    (6, at(9, 5, 0), "m1", 120.0),
    (7, at(9, 6, 10), "m1", 90.0),
    (8, at(9, 7, 0), "m2", 240.0),
]

readings = sq.input("readings", Reading, shape=sq.Shape.POINT)
sliding = (
    readings
    .alter_duration(timedelta(minutes=3))  # each reading counts for three minutes
    .group_by(lambda e: e.meter)
    .snapshot_window()
    .select(lambda w: MeterAverage(meter=w.key, average=w.avg(lambda e: e.consumption)))
)  # mypy: Stream[MeterAverage]
load = readings.hopping_window(timedelta(minutes=4), timedelta(minutes=2)).select(lambda w: Load(
    readings=w.count(),
    total_kw=w.sum(lambda e: e.consumption) / 1000,
    peak=w.max(lambda e: e.consumption),
))
triples = readings.group_by(lambda e: e.meter).count_window(3).select(lambda w: Triple(
    meter=w.key, mean=w.avg(lambda e: e.consumption), peak=w.max(lambda e: e.consumption)))
# a CTI at every reading, at its start: the last reading (09:07) is not committed yet
every_reading = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1))

# --- coloured rows, hourly --------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    colour: str


@dataclass(frozen=True)
class ColourCount:
    colour: str
    n: int


# (arrival, rowtime, colour, kind): SQLstream's hours 3:00-4:00 (red 3, blue 2) and 4:00-5:00
# (red 3, blue 3). The next row will come at 6:15, so the source punctuates at 5:00: without that
# CTI row the hour 4:00-5:00 would wait for the row at 6:15
ROWS: list[tuple[int, datetime, Optional[str], str]] = [
    (0, at(3, 5), "red", "INSERT"), (1, at(3, 12), "blue", "INSERT"), (2, at(3, 27), "red", "INSERT"),
    (3, at(3, 41), "blue", "INSERT"), (4, at(3, 58), "red", "INSERT"), (5, at(4, 0), "red", "INSERT"),
    (6, at(4, 10), "blue", "INSERT"), (7, at(4, 18), "blue", "INSERT"), (8, at(4, 25), "red", "INSERT"),
    (9, at(4, 37), "blue", "INSERT"), (10, at(4, 49), "red", "INSERT"), (11, at(5, 0), None, "CTI"),
]

rows = sq.input("rows", Row, shape=sq.Shape.POINT)
hourly = (rows
          .group_by(lambda e: e.colour)
          .tumbling_window(timedelta(hours=1))
          .select(lambda w: ColourCount(colour=w.key, n=w.count())))
# SQLstream's rowtime bound: every row promises that no later row is earlier than it
rowtime_bound = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1))

# --- tank levels, time-weighted ---------------------------------------------------------------------


class TimeWeightedAverage(sq.UserAggregate[float, tuple[float, float], Optional[float]]):
    """The average of a signal over time: each value weighs by how long it holds in the window."""

    result_type = Optional[float]

    def zero(self) -> tuple[float, float]:
        return (0.0, 0.0)  # (value x seconds, seconds)

    def add(self, acc: tuple[float, float], value: float, start: datetime, end: datetime) -> tuple[float, float]:
        seconds = (end - start).total_seconds()  # the lifetime clipped to the window
        return (acc[0] + value * seconds, acc[1] + seconds)

    def result(self, acc: tuple[float, float]) -> Optional[float]:
        weighted, seconds = acc
        return weighted / seconds if seconds else None


@dataclass(frozen=True)
class Level:
    tank: str
    metres: float


@dataclass(frozen=True)
class TankLevel:
    tank: str
    average: float
    time_weighted: Optional[float]


# (start, end, tank, metres): each level holds until the next report
LEVELS: list[tuple[datetime, datetime, str, float]] = [
    (at(12, 0), at(12, 4), "t1", 1.0), (at(12, 4), at(12, 16), "t1", 4.0), (at(12, 16), at(12, 20), "t1", 2.0),
    (at(12, 0), at(12, 12), "t2", 3.0), (at(12, 12), at(12, 20), "t2", 0.5),
]

levels = sq.input("levels", Level, shape=sq.Shape.INTERVAL)
tank_levels = (levels
               .group_by(lambda e: e.tank)
               .tumbling_window(timedelta(minutes=10))
               .select(lambda w: TankLevel(tank=w.key,
                                           average=w.avg(lambda e: e.metres),
                                           time_weighted=w.aggregate(TimeWeightedAverage(), lambda e: e.metres))))
flush = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1_000_000, flush=True))


# --- running -----------------------------------------------------------------------------------------


def spark_session() -> SparkSession:
    # a local Spark whose Python workers run this interpreter (they import streamql), in UTC
    spark = sq.local_session(**{"spark.app.name": "streamql-windows",
                                "spark.sql.shuffle.partitions": "4"})  # a handful of rows: a handful of partitions
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def hms(t: datetime) -> str:
    """09:02:30, 09:02:30.000001 when the microseconds matter, or INFINITY"""
    if t == sq.INFINITY:
        return "INFINITY"
    return t.strftime("%H:%M:%S.%f") if t.microsecond else t.strftime("%H:%M:%S")


def show(title: str, result: sq.Result[Any], fields: Callable[[Any], str]) -> None:
    cti = "None" if result.final_cti is None else hms(result.final_cti)
    print(f"\n{title} ({len(result.events)} events, final_cti={cti})")
    for e in result.events:
        print(f"  [{hms(e.start)}, {hms(e.end)})  {fields(e.payload)}")


def same(name: str, actual: sq.Result[Any], expected: sq.Result[Any]) -> bool:
    agree = (actual.events, actual.final_cti, actual.dropped) == (expected.events, expected.final_cti, expected.dropped)
    if not agree:
        print(f"  !! {name}: Spark and the reference evaluator differ:\n  {actual}\n  {expected}")
    return agree


def main() -> None:
    spark = spark_session()
    try:
        reading_rows: DataFrame = spark.createDataFrame(
            READINGS, "arrival long, ts timestamp, meter string, consumption double")
        colour_rows = spark.createDataFrame(ROWS, "arrival long, ts timestamp, colour string, kind string")
        level_rows = spark.createDataFrame(LEVELS, "start timestamp, end timestamp, tank string, metres double")
        binder = (sq.Binder(spark)
                  .bind(readings, reading_rows, start="ts", arrival="arrival", advance_time=every_reading)
                  .bind(rows, colour_rows, start="ts", kind="kind", arrival="arrival", advance_time=rowtime_bound)
                  .bind(levels, level_rows, start="start", end="end", advance_time=flush))
        results: dict[str, sq.Result[Any]] = {
            "sliding": binder.run(sliding),
            "load": binder.run(load),
            "triples": binder.run(triples),
            "hourly": binder.run(hourly),
            "tank_levels": binder.run(tank_levels),
        }
    finally:
        spark.stop()

    show("Sliding 3-minute average per meter (grouped snapshot)", results["sliding"],
         lambda p: f"{p.meter}  {p.average:7.2f} W")
    show("Load over the last 4 minutes, every 2 minutes (hopping window)", results["load"],
         lambda p: f"{p.readings} readings  {p.total_kw:.3f} kW  peak {p.peak:.0f} W")
    show("Every 3 consecutive readings per meter (count window)", results["triples"],
         lambda p: f"{p.meter}  mean {p.mean:7.2f} W  peak {p.peak:.0f} W")
    show("Rows per colour and hour (tumbling windows closed by CTIs)", results["hourly"],
         lambda p: f"{p.colour:<5} {p.n}")
    show("Tank levels every 10 minutes (user-defined time-weighted average)", results["tank_levels"],
         lambda p: f"{p.tank}  average {p.average:.2f} m  time-weighted {p.time_weighted:.2f} m")

    # The same queries and inputs in the reference evaluator (plain Python, no JVM).
    reading_items: list[InputItem[Reading]] = [sq.Insert(ts, ts + sq.TICK, Reading(meter, watts))
                                               for _, ts, meter, watts in READINGS]
    row_items: list[InputItem[Row]] = [sq.Cti(ts) if kind == "CTI" else sq.Insert(ts, ts + sq.TICK, Row(str(colour)))
                                       for _, ts, colour, kind in ROWS]
    level_items: list[InputItem[Level]] = [sq.Insert(s, e, Level(tank, metres)) for s, e, tank, metres in LEVELS]
    inputs: dict[str, sq.reference.ReferenceInput[Any]] = {
        "readings": sq.reference.ReferenceInput(reading_items, every_reading),
        "rows": sq.reference.ReferenceInput(row_items, rowtime_bound),
        "levels": sq.reference.ReferenceInput(level_items, flush),
    }
    queries: dict[str, tuple[sq.Stream[Any], str]] = {
        "sliding": (sliding, "readings"), "load": (load, "readings"), "triples": (triples, "readings"),
        "hourly": (hourly, "rows"), "tank_levels": (tank_levels, "levels")}
    agree = all([same(name, results[name], sq.reference.run(q, {source: inputs[source]}))
                 for name, (q, source) in queries.items()])
    print("\nSpark and sq.reference.run agree:", agree)
    if not agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
