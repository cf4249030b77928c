"""The Withdrawal examples of EsperTech's Esper "Processing Model" chapter as streamql queries.

Withdrawal events W1..W8 arrive a second apart (W1..W6 as in the chapter; the amounts are this
example's own). Esper posts the events that enter a data window as new events (the insert
stream) and those that leave it as old events (the remove stream); in streamql the windows give
every event a lifetime, and EDGE output (``run(q, output=sq.Shape.EDGE)``) releases a START edge
when an event enters and an END edge when it leaves. The queries:

- ``select * from Withdrawal#length(5)``: ``keep_last(5)``, as insert and remove streams;
- ``select * from Withdrawal(amount>=200)#length(5)``: a filter *before* the window,
  ``where(...).keep_last(5)``;
- ``select * from Withdrawal#length(5) where amount >= 200``: a where-clause *after* it,
  ``keep_last(5).where(...)``, which applies to old events too;
- ``select sum(amount) from Withdrawal#length(5)``: a snapshot sum over the window;
- ``select sum(amount) as mysum from Withdrawal#time_batch(1 sec)``: ``time_batch`` and a
  tumbling sum per batch;
- ``Withdrawal#length_batch(3)`` as insert and remove streams.

A CTI one tick after every withdrawal releases each result as soon as it is final, as Esper
posts them as events arrive. Every query runs on local Spark and in the reference evaluator, and
the script checks that both release the same.

Run it with ``.venv/bin/python examples/withdrawals.py`` (Java 17+ must be installed), or
``.venv/bin/python examples/withdrawals.py --reference-only`` to run the queries in the reference
evaluator alone (no JVM).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from pyspark.sql import SparkSession

import streamql as sq
from streamql.events import InputItem

UTC = timezone.utc
SECOND = timedelta(seconds=1)


def at(second: float) -> datetime:
    """12:00:00 + ``second`` seconds on 2024-05-01, UTC (application times are always UTC instants)."""
    return datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC) + timedelta(seconds=second)


@dataclass(frozen=True)
class Withdrawal:
    name: str
    amount: int


@dataclass(frozen=True)
class Sum:
    total: int


# (arrival, start, name, amount): W1..W8, then five withdrawals in one-second batches
# ([12:00:10, 12:00:11) twice, [12:00:11, 12:00:12) once, [12:00:13, 12:00:14) twice)
WITHDRAWALS: list[tuple[int, datetime, str, int]] = [
    (i - 1, at(i), f"W{i}", amount) for i, amount in enumerate([500, 100, 200, 50, 150, 700, 80, 300], 1)
]
BATCHED: list[tuple[int, datetime, str, int]] = [
    (0, at(10.2), "A", 100), (1, at(10.7), "B", 50), (2, at(11.3), "C", 200), (3, at(13.4), "D", 75),
    (4, at(13.9), "E", 25),
]

withdrawals = sq.input("withdrawals", Withdrawal, shape=sq.Shape.POINT)
batched = sq.input("batched", Withdrawal, shape=sq.Shape.POINT)
#: a CTI one tick after every withdrawal: each result is released as soon as it is final
as_they_arrive = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=-sq.TICK))

length_window = withdrawals.keep_last(5)
filter_before = withdrawals.where(lambda e: e.amount >= 200).keep_last(5)
where_after = withdrawals.keep_last(5).where(lambda e: e.amount >= 200)
window_sum = withdrawals.keep_last(5).snapshot_window().select(lambda w: Sum(w.sum(lambda e: e.amount)))
batch_sum = batched.time_batch(SECOND).tumbling_window(SECOND).select(lambda w: Sum(w.sum(lambda e: e.amount)))
length_batches = withdrawals.length_batch(3)

#: name -> (title, query, output shape, what to print of a payload)
QUERIES: dict[str, tuple[str, sq.Stream[Any], sq.Shape, Callable[[Any], str]]] = {
    "length": ("Withdrawal#length(5): insert and remove streams", length_window, sq.Shape.EDGE,
               lambda p: p.name),
    "filter_before": ("Withdrawal(amount>=200)#length(5): the filter before the window", filter_before,
                      sq.Shape.EDGE, lambda p: p.name),
    "where_after": ("Withdrawal#length(5) where amount >= 200: the where-clause after it", where_after,
                    sq.Shape.EDGE, lambda p: p.name),
    "window_sum": ("sum(amount) over Withdrawal#length(5): new and prior sums", window_sum, sq.Shape.EDGE,
                   lambda p: str(p.total)),
    "batch_sum": ("sum(amount) as mysum from Withdrawal#time_batch(1 sec)", batch_sum, sq.Shape.INTERVAL,
                  lambda p: str(p.total)),
    "length_batch": ("Withdrawal#length_batch(3): insert and remove streams", length_batches, sq.Shape.EDGE,
                     lambda p: p.name),
}


def reference_inputs() -> dict[str, sq.reference.ReferenceInput[Withdrawal]]:
    def items(rows: list[tuple[int, datetime, str, int]]) -> list[InputItem[Withdrawal]]:
        return [sq.Insert(ts, ts + sq.TICK, Withdrawal(name, amount)) for _, ts, name, amount in rows]

    return {"withdrawals": sq.reference.ReferenceInput(items(WITHDRAWALS), as_they_arrive),
            "batched": sq.reference.ReferenceInput(items(BATCHED), as_they_arrive)}


def reference_results() -> dict[str, sq.Result[Any]]:
    """Every query in the reference evaluator (plain Python, no JVM)."""
    inputs = reference_inputs()
    results = {}
    for name, (_, query, output, _) in QUERIES.items():
        read = "batched" if query is batch_sum else "withdrawals"
        results[name] = sq.reference.run(query, {read: inputs[read]}, output=output)
    return results


def spark_session() -> SparkSession:
    # a local Spark whose Python workers run this interpreter (they import streamql), in UTC
    spark = sq.local_session(**{"spark.app.name": "streamql-withdrawals",
                                "spark.sql.shuffle.partitions": "4"})  # a handful of rows: a handful of partitions
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_results() -> dict[str, sq.Result[Any]]:
    """Every query on local Spark."""
    spark = spark_session()
    try:
        schema = "arrival long, ts timestamp, name string, amount long"
        binder = (sq.Binder(spark)
                  .bind(withdrawals, spark.createDataFrame(WITHDRAWALS, schema), start="ts", arrival="arrival",
                        advance_time=as_they_arrive)
                  .bind(batched, spark.createDataFrame(BATCHED, schema), start="ts", arrival="arrival",
                        advance_time=as_they_arrive))
        return {name: binder.run(query, output=output) for name, (_, query, output, _) in QUERIES.items()}
    finally:
        spark.stop()


def hms(t: datetime) -> str:
    """12:00:06, 12:00:06.000001 when the microseconds matter, or INFINITY"""
    if t == sq.INFINITY:
        return "INFINITY"
    return t.strftime("%H:%M:%S.%f") if t.microsecond else t.strftime("%H:%M:%S")


def show(title: str, result: sq.Result[Any], label: Callable[[Any], str]) -> None:
    cti = "None" if result.final_cti is None else hms(result.final_cti)
    print(f"\n{title} (final_cti={cti})")
    if result.edges:
        # as Esper posts them: at each time the new events (START edges) and the old ones (END edges)
        posts: dict[datetime, tuple[list[str], list[str]]] = {}
        for e in result.edges:
            new, old = posts.setdefault(e.time, ([], []))
            (new if e.kind is sq.EdgeKind.START else old).append(label(e.payload))
        for t, (new, old) in posts.items():
            print(f"  {hms(t)}  new: {', '.join(new) or '-':<12}  old: {', '.join(old) or '-'}")
    for ev in result.events:
        print(f"  [{hms(ev.start)}, {hms(ev.end)})  {label(ev.payload)}")


def show_all(results: dict[str, sq.Result[Any]]) -> None:
    for name, (title, _, _, label) in QUERIES.items():
        show(title, results[name], label)


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
    for name in QUERIES:
        a, e = actual[name], expected[name]
        if (a.events, a.edges, a.final_cti, a.dropped) != (e.events, e.edges, e.final_cti, e.dropped):
            print(f"!! {name}: Spark and the reference evaluator differ:\n  {a}\n  {e}")
            agree = False
    print("\nSpark and sq.reference.run agree:", agree)
    if not agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
