"""Late events on Spark: the DROP and ADJUST violation policies on the same input.

The interval events are the power-meter intervals of StreamInsight's "Event Structure" page;
two more intervals arrive after a CTI that they violate. As in the query-binding example of
"Advancing Application Time", a CTI is generated at the start of every event (frequency 1,
delay 0) and a final CTI at INFINITY flushes the query when the input ends:

    arrival  lifetime                      watts   CTI after it
    0        [09:13:33.317, 09:14:09.270)  100     09:13:33.317
    1        [09:14:09.270, 09:14:22.255)  200     09:14:09.270
    2        [09:13:50.000, 09:14:15.000)  150     late: starts before the CTI, ends after it
    3        [09:13:40.000, 09:13:55.000)  120     late: wholly before the CTI
    4        [09:14:22.255, 09:15:04.987)  100     09:14:22.255, then INFINITY (flush)

DROP removes both late events. ADJUST moves the start of the first to the CTI
(09:14:09.270) and removes the second, of which nothing lies after the CTI.

Run it with ``.venv/bin/python examples/late_events.py`` (Java 17+ must be installed).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from pyspark.sql import SparkSession

import streamql as sq

UTC = timezone.utc


@dataclass(frozen=True)
class Reading:
    consumption: int  # watts


def at(hh: int, mm: int, ss: int, ms: int = 0) -> datetime:
    return datetime(2009, 7, 15, hh, mm, ss, ms * 1000, tzinfo=UTC)


def hms(t: datetime) -> str:
    """09:14:09.270"""
    return t.strftime("%H:%M:%S.%f")[:-3]


# (arrival, start, end, watts), in arrival order
ROWS: list[tuple[int, datetime, datetime, int]] = [
    (0, at(9, 13, 33, 317), at(9, 14, 9, 270), 100),
    (1, at(9, 14, 9, 270), at(9, 14, 22, 255), 200),
    (2, at(9, 13, 50), at(9, 14, 15), 150),
    (3, at(9, 13, 40), at(9, 13, 55), 120),
    (4, at(9, 14, 22, 255), at(9, 15, 4, 987), 100),
]

meter = sq.input("meter", Reading, shape=sq.Shape.INTERVAL)


def settings(policy: sq.AdvanceTimePolicy) -> sq.AdvanceTimeSettings:
    # StreamInsight: new AdvanceTimeSettings(new AdvanceTimeGenerationSettings(1, 0 s, true), null, policy)
    return sq.AdvanceTimeSettings(generation=sq.AdvanceTimeGeneration(every_events=1, flush=True), policy=policy)


def spark_session() -> SparkSession:
    # a local Spark whose Python workers run this interpreter (they import streamql), in UTC
    spark = sq.local_session(**{"spark.app.name": "streamql-late-events",
                                "spark.sql.shuffle.partitions": "4"})  # a handful of rows: a handful of scan units
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    spark = spark_session()
    try:
        df = spark.createDataFrame(ROWS, "arrival long, start_time timestamp, end_time timestamp, consumption long")
        for policy in (sq.AdvanceTimePolicy.DROP, sq.AdvanceTimePolicy.ADJUST):
            binding = sq.Binder(spark).bind(meter, df, start="start_time", end="end_time", arrival="arrival",
                                            advance_time=settings(policy))
            result = binding.run(meter)
            print(f"{policy.name}: dropped={result.dropped} adjusted={result.adjusted}")
            for e in result.events:
                print(f"  [{hms(e.start)}, {hms(e.end)})  {e.payload.consumption:>3} W")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
