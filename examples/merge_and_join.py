"""Two streams at different speeds: SQLstream's ordered merge and StreamInsight's fast/slow join.

1. The ordered merge (SQLstream's "Rowtimes, Streaming Data, and Rowtime Bounds"): the UNION ALL of
   two streams P and Q, ordered by rowtime. Each row bounds its stream's later rowtimes (a CTI
   one tick after the row), and the union's CTI is the lesser of its inputs'. Without a rowtime
   bound on the slow input Q the merge stops after "1:04 from Q": it cannot output "1:06 from P",
   since a Q row at 1:05 may still come. When Q's source punctuates — a CTI row at 1:10, a bound
   without a row — the merge moves on and releases 1:06 from P.
2. The fast-data/slow-reference join (StreamInsight's "Advancing Application Time"): meter readings
   every ten seconds, with CTI rows from their source, joined with the site each meter is at,
   which changes rarely and has no CTIs of its own. The join's CTI is the lesser of its inputs',
   so without CTIs on the reference stream it releases nothing; importing the data stream's
   CTIs (``AdvanceTimeImport``, policy ``ADJUST``) makes it release as fast as the data.

Every query runs on local Spark and in the reference evaluator, and the script checks that both
release the same.

Run it with ``.venv/bin/python examples/merge_and_join.py`` (Java 17+ must be installed), or
``.venv/bin/python examples/merge_and_join.py --reference-only`` to run the queries in the
reference evaluator alone (no JVM).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem
from streamql.reference import ReferenceInput

UTC = timezone.utc


def at(hh: int, mm: int, ss: int = 0) -> datetime:
    """A time on 2024-05-01, UTC (application times are always UTC instants)."""
    return datetime(2024, 5, 1, hh, mm, ss, tzinfo=UTC)


# --- 1. the ordered merge ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    stream: str


# (arrival, rowtime, stream, kind), in arrival order: SQLstream's rows, P at 1:00, 1:03, 1:06 and
# Q at 1:01, 1:02, 1:04.
P_ROWS: list[tuple[int, datetime, Optional[str], str]] = [
    (0, at(1, 0), "P", "INSERT"), (1, at(1, 3), "P", "INSERT"), (2, at(1, 6), "P", "INSERT")]
Q_ROWS: list[tuple[int, datetime, Optional[str], str]] = [
    (0, at(1, 1), "Q", "INSERT"), (1, at(1, 2), "Q", "INSERT"), (2, at(1, 4), "Q", "INSERT")]
# Q's source knows that its next row comes at 1:10 or later: it punctuates with a CTI row
Q_PUNCTUATED = [*Q_ROWS, (3, at(1, 10), None, "CTI")]

p = sq.input("P", Row, shape=sq.Shape.POINT)
q = sq.input("Q", Row, shape=sq.Shape.POINT)
merged = p.union(q)
#: every row is a rowtime bound just after itself: a CTI one tick after each row
rowtime_bounds = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=-sq.TICK))


# --- 2. fast data, slow reference data --------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    meter: str
    watts: int


@dataclass(frozen=True)
class MeterSite:
    meter: str
    site: str


@dataclass(frozen=True)
class SiteReading:
    meter: str
    site: str
    watts: int


# (arrival, start, meter, watts, kind): the data stream's source enqueues a CTI one tick after
# each reading ("the application time handling of the fast stream ... happens in the adapter")
DATA: list[tuple[int, datetime, Optional[str], Optional[int], str]] = []
for i, (second, meter, watts) in enumerate([(10, "m1", 100), (20, "m2", 250), (30, "m1", 200)]):
    DATA += [(2 * i, at(12, 0, second), meter, watts, "INSERT"),
             (2 * i + 1, at(12, 0, second) + sq.TICK, None, None, "CTI")]
# (arrival, start, end, meter, site): m1 moves from north to east at 12:00:25
LOOKUP: list[tuple[int, datetime, datetime, str, str]] = [
    (0, at(12, 0), at(13, 0), "m2", "south"),
    (1, at(12, 0), at(12, 0, 25), "m1", "north"),
    (2, at(12, 0, 25), at(13, 0), "m1", "east"),
]

data = sq.input("dataStream", Reading, shape=sq.Shape.POINT)
lookup = sq.input("lookupStream", MeterSite, shape=sq.Shape.INTERVAL)
joined = data.join(lookup, lambda r, m: r.meter == m.meter,
                   lambda r, m: SiteReading(meter=r.meter, site=m.site, watts=r.watts))
imported = sq.AdvanceTimeSettings(import_=sq.AdvanceTimeImport("dataStream"), policy=sq.AdvanceTimePolicy.ADJUST)


# --- the runs ------------------------------------------------------------------------------------------

#: name -> (title, what to print of a payload)
TITLES: dict[str, tuple[str, Callable[[Any], str]]] = {
    "merge": ("P union Q, no rowtime bound on Q", lambda r: f"from {r.stream}"),
    "merge_bounded": ("P union Q, Q punctuated at 1:10", lambda r: f"from {r.stream}"),
    "join": ("readings join sites, no CTIs on the sites", lambda s: f"{s.meter} at {s.site}: {s.watts} W"),
    "join_imported": ("readings join sites importing the readings' CTIs",
                      lambda s: f"{s.meter} at {s.site}: {s.watts} W"),
}


def reference_results() -> dict[str, sq.Result[Any]]:
    """Every query in the reference evaluator (plain Python, no JVM); list positions are arrivals."""
    def rows(table: list[tuple[int, datetime, Optional[str], str]]) -> list[InputItem[Row]]:
        return [sq.Cti(ts) if kind == "CTI" else sq.Insert(ts, ts + sq.TICK, Row(str(stream)))
                for _, ts, stream, kind in table]

    readings: list[InputItem[Reading]] = [
        sq.Cti(ts) if kind == "CTI" else sq.Insert(ts, ts + sq.TICK, Reading(str(meter), int(watts or 0)))
        for _, ts, meter, watts, kind in DATA]
    sites: list[InputItem[MeterSite]] = [sq.Insert(start, end, MeterSite(meter, site))
                                         for _, start, end, meter, site in LOOKUP]
    p_input = ReferenceInput(rows(P_ROWS), rowtime_bounds)
    return {
        "merge": sq.reference.run(merged, {"P": p_input, "Q": ReferenceInput(rows(Q_ROWS), rowtime_bounds)}),
        "merge_bounded": sq.reference.run(merged, {"P": p_input,
                                                   "Q": ReferenceInput(rows(Q_PUNCTUATED), rowtime_bounds)}),
        "join": sq.reference.run(joined, {"dataStream": ReferenceInput(readings),
                                          "lookupStream": ReferenceInput(sites)}),
        "join_imported": sq.reference.run(joined, {"dataStream": ReferenceInput(readings),
                                                   "lookupStream": ReferenceInput(sites, imported)}),
    }


def spark_session() -> SparkSession:
    # a local Spark whose Python workers run this interpreter (they import streamql), in UTC
    spark = sq.local_session(**{"spark.app.name": "streamql-merge-and-join",
                                "spark.sql.shuffle.partitions": "4"})  # a handful of rows: a handful of partitions
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_results() -> dict[str, sq.Result[Any]]:
    """Every query on local Spark. The arrival columns are one clock across the inputs."""
    spark = spark_session()
    try:
        row_schema = "arrival long, ts timestamp, stream string, kind string"
        p_rows = spark.createDataFrame(P_ROWS, row_schema)
        merge = sq.Binder(spark).bind(p, p_rows, start="ts", kind="kind", arrival="arrival",
                                      advance_time=rowtime_bounds)
        readings = spark.createDataFrame(DATA, "arrival long, ts timestamp, meter string, watts long, kind string")
        sites = spark.createDataFrame(LOOKUP, "arrival long, start timestamp, end timestamp, meter string, site string")
        join = sq.Binder(spark).bind(data, readings, start="ts", kind="kind", arrival="arrival")
        return {
            "merge": merge.bind(q, spark.createDataFrame(Q_ROWS, row_schema), start="ts", kind="kind",
                                arrival="arrival", advance_time=rowtime_bounds).run(merged),
            "merge_bounded": merge.bind(q, spark.createDataFrame(Q_PUNCTUATED, row_schema), start="ts", kind="kind",
                                        arrival="arrival", advance_time=rowtime_bounds).run(merged),
            "join": join.bind(lookup, sites, start="start", end="end", arrival="arrival").run(joined),
            "join_imported": join.bind(lookup, sites, start="start", end="end", arrival="arrival",
                                       advance_time=imported).run(joined),
        }
    finally:
        spark.stop()


def hms(t: datetime) -> str:
    """01:04:00, 01:04:00.000001 when the microseconds matter, or INFINITY"""
    if t == sq.INFINITY:
        return "INFINITY"
    return t.strftime("%H:%M:%S.%f") if t.microsecond else t.strftime("%H:%M:%S")


def show_all(results: dict[str, sq.Result[Any]]) -> None:
    for name, (title, label) in TITLES.items():
        result = results[name]
        cti = "None" if result.final_cti is None else hms(result.final_cti)
        print(f"\n{title} ({len(result.events)} events, final_cti={cti})")
        for e in result.events:
            print(f"  {hms(e.start)}  {label(e.payload)}")


def main() -> None:
    expected = reference_results()
    if "--reference-only" in sys.argv[1:]:
        print("Released by sq.reference.run:")
        show_all(expected)
        return
    actual = spark_results()
    print("Released on Spark:")
    show_all(actual)
    agree = True
    for name in TITLES:
        a, e = actual[name], expected[name]
        if (a.events, a.final_cti, a.dropped, a.adjusted) != (e.events, e.final_cti, e.dropped, e.adjusted):
            print(f"!! {name}: Spark and the reference evaluator differ:\n  {a}\n  {e}")
            agree = False
    print("\nSpark and sq.reference.run agree:", agree)
    if not agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
