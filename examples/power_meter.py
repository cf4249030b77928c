"""Power-meter readings on Spark: filter, project, extend lifetimes, release with CTIs.

The readings of meter "m1" are the point events of StreamInsight's "Event Structure" page
(100, 200 and 100 watts at 09:13:33.317, 09:14:09.270 and 09:14:22.255 on 2009-07-15);
meters "m2" and "m3" add a glitch (a 0 W reading), a reading that arrives late but within
the grace period, and one that arrives too late.

The query drops glitches, converts watts to kilowatts into a new payload type and lets every
reading count for three minutes. A CTI is generated after every 4 accepted readings, 30 s
behind the greatest start seen, and a final CTI at INFINITY flushes everything at the end.

Run it with ``.venv/bin/python examples/power_meter.py`` (Java 17+ must be installed).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import SparkSession

import streamql as sq

UTC = timezone.utc


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float  # watts


@dataclass(frozen=True)
class Usage:
    meter: str
    kilowatts: float


def at(hh: int, mm: int, ss: int, ms: int = 0) -> datetime:
    """A time on 2009-07-15, UTC (application times are always UTC instants)."""
    return datetime(2009, 7, 15, hh, mm, ss, ms * 1000, tzinfo=UTC)


# (arrival, start time, meter, watts), in arrival order
READINGS: list[tuple[int, datetime, str, float]] = [
    (0, at(9, 13, 33, 317), "m1", 100.0),   # StreamInsight's "Event Structure" points, meter m1
    (1, at(9, 13, 40), "m2", 250.0),
    (2, at(9, 13, 52, 500), "m3", 0.0),     # a glitch: removed by where()
    (3, at(9, 14, 9, 270), "m1", 200.0),    # 4th reading: CTI 09:14:09.270 - 30 s = 09:13:39.270
    (4, at(9, 14, 15), "m2", 260.0),
    (5, at(9, 13, 45), "m3", 75.0),         # late, but after the CTI: accepted
    (6, at(9, 14, 22, 255), "m1", 100.0),
    (7, at(9, 13, 35), "m2", 240.0),        # too late: before the CTI 09:13:39.270, dropped
    (8, at(9, 14, 30), "m3", 80.0),         # 8th accepted: CTI 09:14:30 - 30 s = 09:14:00
    (9, at(9, 14, 50), "m2", 270.0),
    (10, at(9, 15, 4, 987), "m1", 150.0),
]

readings = sq.input("readings", Reading, shape=sq.Shape.POINT)
usage = (
    readings
    .where(lambda e: e.consumption > 0)
    .select(lambda e: Usage(meter=e.meter, kilowatts=e.consumption / 1000))
    .alter_duration(timedelta(minutes=3))  # each reading counts for three minutes
)  # mypy: Stream[Usage]

settings = sq.AdvanceTimeSettings(
    generation=sq.AdvanceTimeGeneration(every_events=4, delay=timedelta(seconds=30), flush=True),
    policy=sq.AdvanceTimePolicy.DROP,
)


def spark_session() -> SparkSession:
    # a local Spark whose Python workers run this interpreter (they import streamql), in UTC
    spark = sq.local_session(**{"spark.app.name": "streamql-power-meter",
                                "spark.sql.shuffle.partitions": "4"})  # a handful of rows: a handful of scan units
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def hms(t: datetime) -> str:
    """09:14:09.270"""
    return t.strftime("%H:%M:%S.%f")[:-3]


def show(events: list[sq.Event[Usage]]) -> None:
    print(f"{'start':<12}  {'end':<12}  {'meter':<5}  {'kW':>5}")
    for e in events:
        print(f"{hms(e.start):<12}  {hms(e.end):<12}  {e.payload.meter:<5}  {e.payload.kilowatts:>5.3f}")


def show_counts(result: sq.Result[Any]) -> None:
    print(f"dropped={result.dropped} adjusted={result.adjusted} bad_rows={result.bad_rows} "
          f"final_cti={result.final_cti}")


def main() -> None:
    spark = spark_session()
    try:
        df = spark.createDataFrame(READINGS, "arrival long, ts timestamp, meter string, consumption double")
        binding = sq.Binder(spark).bind(readings, df, start="ts", arrival="arrival", advance_time=settings)
        result = binding.run(usage)
    finally:
        spark.stop()

    print(f"Released on Spark ({len(result.events)} events):")
    show(result.events)
    show_counts(result)

    # The same query and input in the reference evaluator (plain Python, no JVM).
    items = [sq.Insert(ts, ts + sq.TICK, Reading(meter, watts)) for _, ts, meter, watts in READINGS]
    expected = sq.reference.run(usage, {"readings": sq.reference.ReferenceInput(items, settings)})
    same = (result.events, result.dropped, result.adjusted, result.bad_rows, result.final_cti) == (
        expected.events, expected.dropped, expected.adjusted, expected.bad_rows, expected.final_cti)
    print("Spark and sq.reference.run agree:", same)
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
