"""Trades priced by the quote in force: an as-of join, and the quotes as a signal.

Quotes of two symbols arrive a few times a second, trades now and then. Each trade is joined with
the latest quote of its symbol at or before it (``as_of_join``), once without a limit and once
only with quotes at most two seconds old (the first trade of XYZ comes before any quote of XYZ:
it is not priced). The quotes become a signal (``to_signal``: each lasts until the next quote of
its symbol), over which a tumbling window finds the highest bid in force in every five seconds —
including a bid quoted before the window that still holds in it.

Both inputs generate a CTI after every event with a delay of one second (a quote or trade may
arrive up to a second late) and flush at the end. The join's CTI is the lesser of the two: a
trade is released once the quotes' CTI has passed it — no later quote can then start at or before
it.

Every query runs on local Spark and in the reference evaluator, and the script checks that both
release the same.

Run it with ``.venv/bin/python examples/as_of_join.py`` (Java 17+ must be installed), or
``.venv/bin/python examples/as_of_join.py --reference-only`` to run the queries in the reference
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
    """09:30:00 + ``second`` seconds on 2024-05-01, UTC (application times are always UTC instants)."""
    return datetime(2024, 5, 1, 9, 30, 0, tzinfo=UTC) + timedelta(seconds=second)


@dataclass(frozen=True)
class Quote:
    symbol: str
    bid: float


@dataclass(frozen=True)
class Trade:
    symbol: str
    size: int


@dataclass(frozen=True)
class Priced:
    symbol: str
    size: int
    bid: float


@dataclass(frozen=True)
class Held:
    symbol: str
    bid: float


# (arrival, time, symbol, value) in arrival order: quotes and trades of ABC and XYZ
QUOTES: list[tuple[int, datetime, str, float]] = [
    (0, at(0.0), "ABC", 10.00), (1, at(0.4), "XYZ", 55.10), (2, at(1.0), "ABC", 10.02),
    (3, at(2.5), "ABC", 10.01), (4, at(3.0), "XYZ", 55.00), (5, at(7.5), "ABC", 10.05),
    (6, at(8.0), "XYZ", 55.20),
]
TRADES: list[tuple[int, datetime, str, int]] = [
    (0, at(0.2), "XYZ", 300), (1, at(1.0), "ABC", 100), (2, at(2.7), "ABC", 50), (3, at(5.5), "XYZ", 200),
    (4, at(6.0), "ABC", 75), (5, at(8.0), "XYZ", 10),
]

quotes = sq.input("quotes", Quote, shape=sq.Shape.POINT)
trades = sq.input("trades", Trade, shape=sq.Shape.POINT)
#: a CTI after every event, one second behind it; flushed at the end
late_by_a_second = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=SECOND, flush=True))

priced = trades.as_of_join(quotes, lambda t, q: t.symbol == q.symbol, lambda t, q: Priced(t.symbol, t.size, q.bid))
fresh = trades.as_of_join(quotes, lambda t, q: t.symbol == q.symbol, lambda t, q: Priced(t.symbol, t.size, q.bid),
                          within=2 * SECOND)
bids = quotes.to_signal(lambda q: q.symbol)
# a quote from before a window still holds in it: the signal, not the quote's own instant, counts
held = bids.group_by(lambda q: q.symbol).tumbling_window(5 * SECOND).select(
    lambda w: Held(w.key, w.max(lambda q: q.bid)))

#: name -> (title, query, what to print of a payload)
QUERIES: dict[str, tuple[str, sq.Stream[Any], Callable[[Any], str]]] = {
    "priced": ("each trade with the latest quote of its symbol", priced,
               lambda p: f"{p.symbol} {p.size} @ {p.bid:.2f}"),
    "fresh": ("... only with quotes at most 2 s old", fresh, lambda p: f"{p.symbol} {p.size} @ {p.bid:.2f}"),
    "bids": ("the quotes as a signal: each until the next of its symbol", bids,
             lambda q: f"{q.symbol} {q.bid:.2f}"),
    "held": ("the highest bid in force in each 5 s window, per symbol", held, lambda h: f"{h.symbol} {h.bid:.2f}"),
}


def reference_inputs() -> dict[str, sq.reference.ReferenceInput[Any]]:
    quote_items: list[InputItem[Quote]] = [sq.Insert(t, t + sq.TICK, Quote(s, b)) for _, t, s, b in QUOTES]
    trade_items: list[InputItem[Trade]] = [sq.Insert(t, t + sq.TICK, Trade(s, n)) for _, t, s, n in TRADES]
    return {"quotes": sq.reference.ReferenceInput(quote_items, late_by_a_second),
            "trades": sq.reference.ReferenceInput(trade_items, late_by_a_second)}


def reference_results() -> dict[str, sq.Result[Any]]:
    """Every query in the reference evaluator (plain Python, no JVM)."""
    inputs = reference_inputs()
    return {name: sq.reference.run(query, {n: i for n, i in inputs.items() if n == "quotes" or name in ("priced", "fresh")})
            for name, (_, query, _) in QUERIES.items()}


def spark_results() -> dict[str, sq.Result[Any]]:
    """Every query on local Spark."""
    spark: SparkSession = sq.local_session(**{"spark.app.name": "streamql-as-of-join",
                                              "spark.sql.shuffle.partitions": "4"})  # a handful of rows
    spark.sparkContext.setLogLevel("ERROR")
    try:
        binder = (sq.Binder(spark)
                  .bind(quotes, spark.createDataFrame(QUOTES, "arrival long, ts timestamp, symbol string, bid double"),
                        start="ts", arrival="arrival", advance_time=late_by_a_second)
                  .bind(trades, spark.createDataFrame(TRADES, "arrival long, ts timestamp, symbol string, size long"),
                        start="ts", arrival="arrival", advance_time=late_by_a_second))
        return {name: binder.run(query) for name, (_, query, _) in QUERIES.items()}
    finally:
        spark.stop()


def hms(t: datetime) -> str:
    """09:30:01.5, or INFINITY"""
    if t == sq.INFINITY:
        return "INFINITY"
    return t.strftime("%H:%M:%S") + (f".{t.microsecond // 100_000}" if t.microsecond else "")


def show_all(results: dict[str, sq.Result[Any]]) -> None:
    for name, (title, _, label) in QUERIES.items():
        result = results[name]
        print(f"\n{title} (final_cti={'None' if result.final_cti is None else hms(result.final_cti)})")
        for e in result.events:
            lifetime = hms(e.start) if e.end == e.start + sq.TICK else f"[{hms(e.start)}, {hms(e.end)})"
            print(f"  {lifetime:<24}  {label(e.payload)}")


def main() -> None:
    expected = reference_results()
    if "--reference-only" in sys.argv[1:]:
        print("Released by sq.reference.run:")
        show_all(expected)
        return
    actual = spark_results()
    print("Released on Spark:")
    show_all(actual)
    agree = all((actual[n].events, actual[n].final_cti) == (expected[n].events, expected[n].final_cti)
                for n in QUERIES)
    print("\nSpark and sq.reference.run agree:", agree)
    if not agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
