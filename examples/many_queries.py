"""Many queries over one scan: a monitoring script's queries, run together with ``Binder.run_many``.

A monitoring script seldom runs one query: here, over one day of power readings from 20 meters,
every meter gets its own query (its readings counted in hopping windows of an hour, every 15
minutes), and two more watch all meters (the readings above 490 W, and the hourly average).
``run_many`` runs the 22 queries together:

- the readings are scanned once (their CTIs generated, late readings dropped) for all 22;
- the 20 per-meter filters are one pass over the readings (Esper's *filter index*: one hash
  lookup per reading finds the queries whose ``meter == ...`` it satisfies), and since the 20
  queries are the same windows over different filters, the windows run as one query grouped by
  the filter;
- each query gets exactly what ``run`` of it alone returns: the script checks that for every
  query, and prints how long the two ways took.

Run it with ``.venv/bin/python examples/many_queries.py`` (Java 17+ must be installed).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import streamql as sq

METERS = 20
READINGS = 60_000  # a reading every 1.44 s, over one day


@dataclass(frozen=True)
class Reading:
    meter: str
    watts: float


@dataclass(frozen=True)
class Count:
    readings: int


@dataclass(frozen=True)
class Average:
    watts: float


readings = sq.input("readings", Reading)


def meter_counts(meter: str) -> sq.Stream[Count]:
    """How many readings ``meter`` sent in each hour, every 15 minutes."""
    return (readings.where(lambda r: r.meter == meter)
            .hopping_window(timedelta(hours=1), timedelta(minutes=15))
            .select(lambda w: Count(w.count())))


QUERIES: dict[str, sq.Stream[Any]] = {f"m{i}": meter_counts(f"m{i}") for i in range(METERS)}
QUERIES["high"] = readings.where(lambda r: r.watts > 490)
QUERIES["average"] = readings.tumbling_window(timedelta(hours=1)).select(lambda w: Average(w.avg(lambda r: r.watts)))


def day_of_readings(spark: SparkSession) -> DataFrame:
    """``READINGS`` readings in arrival order, the meters taking turns; every 500th one arrives
    ten minutes late (its CTI has passed: it is dropped)."""
    day = int(datetime(2026, 3, 2, tzinfo=timezone.utc).timestamp() * 1_000_000)
    ids = spark.range(0, READINGS, 1, 4)
    late = F.col("id") % 500 == 499
    ts = F.lit(day) + F.col("id") * 1_440_000 - F.when(late, F.lit(600_000_000)).otherwise(F.lit(0))
    return ids.select(ts.alias("ts"), F.concat(F.lit("m"), (F.col("id") % METERS).cast("string")).alias("meter"),
                      ((F.col("id") * 37) % 500).cast("double").alias("watts"))


def main() -> None:
    # a local Spark whose Python workers run this interpreter (they import streamql), in UTC
    spark = sq.local_session(**{"spark.app.name": "streamql-many-queries", "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        settings = sq.AdvanceTimeSettings(
            sq.AdvanceTimeGeneration(every_events=100, delay=timedelta(seconds=30), flush=True),
            policy=sq.AdvanceTimePolicy.DROP)
        binding = sq.Binder(spark).bind(readings, day_of_readings(spark), start="ts", advance_time=settings)

        binding.run(QUERIES["m0"])  # the JVM's first jobs are slow: not part of either timing
        began = time.perf_counter()
        together = binding.run_many(QUERIES)
        together_s = time.perf_counter() - began
        began = time.perf_counter()
        alone = {name: binding.run(q) for name, q in QUERIES.items()}
        alone_s = time.perf_counter() - began

        print(f"{'query':8} {'events':>6} {'dropped':>7}  first event")
        for name, result in together.items():
            first = result.events[0]
            print(f"{name:8} {len(result.events):6} {result.dropped:7}  "
                  f"{first.start:%H:%M:%S}-{first.end:%H:%M:%S} {first.payload}")
        print(f"\n{len(QUERIES)} queries together: {together_s:.1f} s; one after another: {alone_s:.1f} s")
        print("run_many returns what run returns for every query:", together == alone)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
