"""Patterns: a card used twice within minutes, and orders not paid in time.

Withdrawals of three accounts arrive over half an hour. ``followed_by`` finds each withdrawal
followed by another withdrawal of the same account within 10 minutes (EsperTech's Esper
``every w1=Withdrawal -> w2=Withdrawal(accountId = w1.accountId)``, with a ``timer:within``): each
match is a point event at the second withdrawal. With ``all_matches=True`` a withdrawal meets every
later one within 10 minutes, not only the first. ``not_followed_by`` reports each order that no
payment of it follows within 15 minutes, 15 minutes after the order (Flink CEP's
``notFollowedBy`` ... ``within``).

Every input generates a CTI after every event with a delay of one minute (an event may arrive up
to a minute late) and flushes at the end. A match is released once the CTIs prove that no earlier
partner can still come; an unpaid order once the payments' CTI has passed its deadline.

Every query runs on local Spark and in the reference evaluator, and the script checks that both
release the same.

Run it with ``.venv/bin/python examples/patterns.py`` (Java 17+ must be installed), or
``.venv/bin/python examples/patterns.py --reference-only`` to run the queries in the reference
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
MINUTE = timedelta(minutes=1)


def at(minute: int) -> datetime:
    """21:00 + ``minute`` minutes on 2024-05-01, UTC (application times are always UTC instants)."""
    return datetime(2024, 5, 1, 21, 0, tzinfo=UTC) + minute * MINUTE


@dataclass(frozen=True)
class Withdrawal:
    account: str
    amount: int


@dataclass(frozen=True)
class Twice:
    account: str
    first: int
    second: int


@dataclass(frozen=True)
class Order:
    order_id: int
    total: float


@dataclass(frozen=True)
class Payment:
    order_id: int
    paid: float


# (arrival, time, account, amount) in arrival order: the withdrawal of 21:07 arrives a little late
WITHDRAWALS: list[tuple[int, datetime, str, int]] = [
    (0, at(0), "A-1", 200), (1, at(2), "B-7", 40), (2, at(6), "A-1", 300), (3, at(8), "C-3", 500),
    (4, at(7), "B-7", 60), (5, at(9), "A-1", 250), (6, at(20), "C-3", 100), (7, at(24), "A-1", 80),
    (8, at(29), "A-1", 80),
]
# (arrival, time, order id, total) and (arrival, time, order id, paid)
ORDERS: list[tuple[int, datetime, int, float]] = [
    (0, at(0), 1, 20.0), (1, at(3), 2, 35.5), (2, at(10), 3, 12.0), (3, at(12), 4, 99.0)]
PAYMENTS: list[tuple[int, datetime, int, float]] = [
    (0, at(9), 1, 20.0), (1, at(18), 2, 35.5), (2, at(26), 4, 99.0), (3, at(40), 3, 12.0)]

withdrawals = sq.input("withdrawals", Withdrawal, shape=sq.Shape.POINT)
orders = sq.input("orders", Order, shape=sq.Shape.POINT)
payments = sq.input("payments", Payment, shape=sq.Shape.POINT)
#: a CTI after every event, one minute behind it; flushed at the end
late_by_a_minute = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=1, delay=MINUTE, flush=True))

twice = withdrawals.followed_by(withdrawals, lambda a, b: a.account == b.account,
                                lambda a, b: Twice(a.account, a.amount, b.amount), within=10 * MINUTE)
every = withdrawals.followed_by(withdrawals, lambda a, b: a.account == b.account,
                                lambda a, b: Twice(a.account, a.amount, b.amount), within=10 * MINUTE,
                                all_matches=True)
unpaid = orders.not_followed_by(payments, lambda o, p: o.order_id == p.order_id, within=15 * MINUTE)

#: name -> (title, query, the inputs it reads, what to print of a payload)
QUERIES: dict[str, tuple[str, sq.Stream[Any], tuple[str, ...], Callable[[Any], str]]] = {
    "twice": ("a withdrawal followed by the next of its account within 10 minutes", twice, ("withdrawals",),
              lambda t: f"{t.account} {t.first} then {t.second}"),
    "every": ("... followed by every later one within 10 minutes", every, ("withdrawals",),
              lambda t: f"{t.account} {t.first} then {t.second}"),
    "unpaid": ("orders not followed by their payment within 15 minutes", unpaid, ("orders", "payments"),
               lambda o: f"order {o.order_id} ({o.total:.2f})"),
}


def reference_inputs() -> dict[str, sq.reference.ReferenceInput[Any]]:
    w: list[InputItem[Withdrawal]] = [sq.Insert(t, t + sq.TICK, Withdrawal(a, n)) for _, t, a, n in WITHDRAWALS]
    o: list[InputItem[Order]] = [sq.Insert(t, t + sq.TICK, Order(i, x)) for _, t, i, x in ORDERS]
    p: list[InputItem[Payment]] = [sq.Insert(t, t + sq.TICK, Payment(i, x)) for _, t, i, x in PAYMENTS]
    return {"withdrawals": sq.reference.ReferenceInput(w, late_by_a_minute),
            "orders": sq.reference.ReferenceInput(o, late_by_a_minute),
            "payments": sq.reference.ReferenceInput(p, late_by_a_minute)}


def reference_results() -> dict[str, sq.Result[Any]]:
    """Every query in the reference evaluator (plain Python, no JVM)."""
    inputs = reference_inputs()
    return {name: sq.reference.run(query, {n: inputs[n] for n in read})
            for name, (_, query, read, _) in QUERIES.items()}


def spark_results() -> dict[str, sq.Result[Any]]:
    """Every query on local Spark."""
    spark: SparkSession = sq.local_session(**{"spark.app.name": "streamql-patterns",
                                              "spark.sql.shuffle.partitions": "4"})  # a handful of rows
    spark.sparkContext.setLogLevel("ERROR")
    try:
        binder = (sq.Binder(spark)
                  .bind(withdrawals, spark.createDataFrame(WITHDRAWALS, "arrival long, ts timestamp, account string, "
                                                                        "amount long"),
                        start="ts", arrival="arrival", advance_time=late_by_a_minute)
                  .bind(orders, spark.createDataFrame(ORDERS, "arrival long, ts timestamp, order_id long, total double"),
                        start="ts", arrival="arrival", advance_time=late_by_a_minute)
                  .bind(payments, spark.createDataFrame(PAYMENTS, "arrival long, ts timestamp, order_id long, "
                                                                  "paid double"),
                        start="ts", arrival="arrival", advance_time=late_by_a_minute))
        return {name: binder.run(query) for name, (_, query, _, _) in QUERIES.items()}
    finally:
        spark.stop()


def hm(t: datetime) -> str:
    """21:07, or INFINITY"""
    return "INFINITY" if t == sq.INFINITY else t.strftime("%H:%M")


def show_all(results: dict[str, sq.Result[Any]]) -> None:
    for name, (title, _, _, label) in QUERIES.items():
        result = results[name]
        print(f"\n{title} (final_cti={'None' if result.final_cti is None else hm(result.final_cti)})")
        for e in result.events:
            print(f"  {hm(e.start)}  {label(e.payload)}")


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
