"""Session windows on Spark: visits of a web site's users (see docs/session-windows.md).

Clicks (point events) of three users, in arrival order, a CTI after every click:

- visits per user: the clicks whose lifetimes, each extended by 10 minutes, overlap form one visit,
  from its first click to 10 minutes after its last one (a click is a point event: it lasts one
  tick, so the visit ends at its last click plus a tick plus 10 minutes) (``group_by`` +
  ``session_window``);
- the same visits cut into pieces of at most 15 minutes from their first click
  (``max_duration``): a long visit is reported in parts, the last ending with the visit;
- busy periods of the whole site: sessions of every user's clicks together (no ``group_by``).

A visit is released once the CTI reaches its end, 10 minutes after its last click: until then a
click could still extend it. The last visits wait for the final CTI (``flush=True``).

Every query runs on local Spark and in the reference evaluator; the script checks that both
release the same events.

Run it with ``.venv/bin/python examples/session_windows.py`` (Java 17+ must be installed), or with
``--reference-only`` for the reference evaluator alone.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import streamql as sq
from streamql.events import InputItem

UTC = timezone.utc
GAP = timedelta(minutes=10)


def at(hh: int, mm: int) -> datetime:
    """A time on 2024-05-01, UTC (application times are always UTC instants)."""
    return datetime(2024, 5, 1, hh, mm, tzinfo=UTC)


@dataclass(frozen=True)
class Click:
    user: str
    page: str
    millis: int  # how long the page took to render


@dataclass(frozen=True)
class Visit:
    user: str
    clicks: int
    slowest: int  # the longest render of the visit, in ms


@dataclass(frozen=True)
class Busy:
    clicks: int
    mean_millis: float


# (arrival, time, user, page, millis), in arrival order
CLICKS: list[tuple[int, datetime, str, str, int]] = [
    (0, at(9, 0), "ann", "home", 120),
    (1, at(9, 2), "bob", "home", 90),
    (2, at(9, 4), "ann", "shoes", 300),
    (3, at(9, 9), "ann", "cart", 210),
    (4, at(9, 13), "bob", "search", 150),
    (5, at(9, 17), "ann", "pay", 400),
    (6, at(9, 25), "cid", "home", 80),
    (7, at(9, 26), "ann", "home", 110),
    (8, at(9, 40), "bob", "home", 95),
    (9, at(9, 41), "cid", "help", 130),
    (10, at(10, 5), "ann", "home", 100),
]

clicks = sq.input("clicks", Click, shape=sq.Shape.POINT)
visits = (clicks.group_by(lambda e: e.user)
          .session_window(GAP)
          .select(lambda w: Visit(user=w.key, clicks=w.count(), slowest=w.max(lambda e: e.millis))))
visit_parts = (clicks.group_by(lambda e: e.user)
               .session_window(GAP, max_duration=timedelta(minutes=15))
               .select(lambda w: Visit(user=w.key, clicks=w.count(), slowest=w.max(lambda e: e.millis))))
busy = clicks.session_window(timedelta(minutes=5)).select(
    lambda w: Busy(clicks=w.count(), mean_millis=w.avg(lambda e: e.millis)))
every_click = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, flush=True))


def hm(t: datetime) -> str:
    if t == sq.INFINITY:
        return "INFINITY"
    return t.strftime("%H:%M:%S.%f") if t.microsecond else t.strftime("%H:%M")


def show(title: str, result: sq.Result[Any], fields: Callable[[Any], str]) -> None:
    cti = "None" if result.final_cti is None else hm(result.final_cti)
    print(f"\n{title} ({len(result.events)} events, final_cti={cti})")
    for e in result.events:
        print(f"  [{hm(e.start)}, {hm(e.end)})  {fields(e.payload)}")


def reference_results(queries: dict[str, sq.Stream[Any]]) -> dict[str, sq.Result[Any]]:
    """The queries in the reference evaluator (plain Python, no JVM)."""
    items: list[InputItem[Click]] = [sq.Insert(ts, ts + sq.TICK, Click(user, page, millis))
                                     for _, ts, user, page, millis in CLICKS]
    given = {"clicks": sq.reference.ReferenceInput(items, every_click)}
    return {name: sq.reference.run(q, given) for name, q in queries.items()}


def spark_results(queries: dict[str, sq.Stream[Any]]) -> dict[str, sq.Result[Any]]:
    spark = sq.local_session(**{"spark.app.name": "streamql-sessions", "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rows = spark.createDataFrame(CLICKS, "arrival long, ts timestamp, user string, page string, millis long")
        binder = sq.Binder(spark).bind(clicks, rows, start="ts", arrival="arrival", advance_time=every_click)
        return {name: binder.run(q) for name, q in queries.items()}
    finally:
        spark.stop()


def main() -> None:
    """``--reference-only``: run the queries in the reference evaluator alone (no JVM)."""
    reference_only = "--reference-only" in sys.argv[1:]
    queries: dict[str, sq.Stream[Any]] = {"visits": visits, "visit_parts": visit_parts, "busy": busy}
    expected = reference_results(queries)
    results = expected if reference_only else spark_results(queries)
    show("Visits per user (gap 10 minutes)", results["visits"],
         lambda p: f"{p.user}  clicks={p.clicks}  slowest page {p.slowest} ms")
    show("Visits in parts of at most 15 minutes", results["visit_parts"],
         lambda p: f"{p.user}  clicks={p.clicks}  slowest page {p.slowest} ms")
    show("Busy periods of the site (gap 5 minutes, all users)", results["busy"],
         lambda p: f"clicks={p.clicks}  {p.mean_millis:.1f} ms on average")
    if reference_only:
        return
    agree = True
    for name in queries:
        if (results[name].events, results[name].final_cti) != (expected[name].events, expected[name].final_cti):
            print(f"  !! {name}: Spark and the reference evaluator differ:\n  {results[name]}\n  {expected[name]}")
            agree = False
    print("\nSpark and sq.reference.run agree:", agree)
    if not agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
