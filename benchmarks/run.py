"""streamql benchmarks: one command, a printed table, a hand-written PySpark baseline in the same run.

    .venv/bin/python benchmarks/run.py [--events N] [--repeat R] [--only ROW,ROW] [--check] [--queries Q]

Each row runs a streamql query and a PySpark job an expert would write by hand for the same
output (without CTI handling), writes both to parquet, and reports the best wall time of
``--repeat`` runs and their ratio. ``--events`` overrides every row's own event count.

Rows (names for ``--only``, default all):

  alter            10 M points: where + select + alter_duration, CTI every 1000 events, DROP
  alter-late       the same with 1 in 10,000 events 5 s late (DROP removes them)
  sliding-avg      5 M points over 1,000 meters: alter_duration(3 min) + grouped snapshot avg;
                   baseline: endpoint sweep (running sums over +value/-value endpoints per meter)
  sliding-avg-all  the same snapshot over all meters (no group_by); baseline: the same sweep
                   without partitioning, which Spark runs as a single-partition window. Also
                   prints the tasks of every stage of both jobs (stages with > 1 task use both cores)
  hopping-count    5 M points over 1,000 keys: grouped hopping_window(10 min, 1 min) count;
                   baseline: Spark's window(ts, "10 minutes", "1 minute") grouping
  join             1 M x 1 M intervals on 10,000 keys: temporal equi-join; baseline: a join on the
                   key with an overlap filter
  stream           live queries on Structured Streaming over a file directory, 100 k events per
                   micro-batch: hopping counts against Spark's own streaming aggregation (outputs
                   compared), the sliding average, a grouped join, one event per micro-batch, and a
                   plain read-and-write job (the floor): events/s, ratio, step median, latency
                   p50/p95, jobs per step, state rows; see benchmarks/streaming.py. Not part of the
                   default run's table above it; runs last
  join-any         200 k x 200 k intervals, on=None (every overlapping pair); baseline: time buckets
                   of 1 ms, each interval exploded over its buckets, a join on the bucket, the pair
                   kept in the bucket of its intersection's start. Also prints streamql's time at
                   twice the events (near-linear scaling: about twice the time)
  late-records     as alter-late with an arrival column, also writing a record of every late event
                   (``write(..., late_path=...)``); baseline: the CTI approximated per block of 1,000
                   rows (the greatest start of the blocks before, as a user would write it: a block
                   aggregate, a running max over the blocks, a broadcast join), the events marked late
                   below it, written once partitioned by ``late``
  alter-arrival    as alter, with an explicit arrival column (here in partition order); baseline: the
                   plain filter + projection
  alter-shuffled   5 M points as alter, the arrival column taken, then the rows spread over the
                   partitions again (round-robin): out of storage order, so the binder numbers them;
                   baseline: the plain filter + projection
  as-of            2 M trades x 2 M quotes (points) on 1,000 symbols, a quote 0.3 ms after each trade
                   of its symbol: as_of_join on the symbol (each trade with the latest quote at or
                   before it); baseline: the hand-written as-of join, one window over the union of
                   both sides per symbol carrying the last quote (F.last ignoring nulls)
  sessions         5 M clicks over 10,000 users (each click's user drawn by a hash): grouped
                   session_window(3 min) count; baseline: Spark's session_window(ts, "3 minutes")
                   grouping (its session ends at the last click + 3 min, streamql's a tick later: a
                   click is a point [ts, ts + 1 us), so the baseline adds the tick)
  top-k            5 M points over 1,000 meters, each reading's consumption drawn by a hash: grouped
                   hopping_window(10 min, 1 min).top_k(3) by consumption; baseline: F.window, then
                   rank() over (window, meter) ordered by consumption, rank <= 3
  followed-by      1 M withdrawals over 10,000 accounts (each withdrawal's account drawn by a hash: an
                   account withdraws every 10 minutes on average; no two withdrawals at one time):
                   withdrawals.followed_by(withdrawals) of the same account within 10 min (the next
                   withdrawal of the account, about 63 % of them match); baseline: lead() over the
                   account ordered by time (the next withdrawal), then a filter on the difference
                   < 10 min. With distinct times per account the next row is the one earliest partner;
                   with ties of start lead() would pick one of the tied partners where streamql
                   matches them all, so the generator never ties
  not-followed-by  1 M orders (one every 10 ms, unique order ids, 100,000 customers) and their payments,
                   each order's fate drawn by a hash: 90 % paid 1 s to < 15 min later, 5 % paid 15 min
                   (1 % exactly at the bound, which is too late) to 25 min later, 5 % never paid:
                   orders.not_followed_by(payments) on the order id within 15 min (~10 % reported, at
                   order time + 15 min); baseline: a left anti-join of the orders with the payments on
                   the order id and order time < payment time < order time + 15 min. The payments
                   arrive in their orders' order (up to 25 min out of time order), so this row's CTIs
                   lag by 30 minutes: none is late
  cached-sliding-avg, cached-hopping, cached-join
                   2 M readings / 2 M hits / 0.5 M x 0.5 M intervals cached in memory (and materialized
                   before timing) with an arrival column, as in a notebook reusing its input: where the
                   query's fixed cost (its planning and scan jobs) shows
  many             50 queries (``--queries``) over the 5 M readings of sliding-avg (1,000 meters),
                   each where(meter == m_i) then an ungrouped hopping_window(10 min, 1 min) count,
                   collected: run_many of them all against run of one alone (target: together <= 3x
                   one alone) and the 50 run one after another (timed once); also write_many to
                   parquet and a hand-written PySpark job computing all 50 at once (F.window, no
                   CTIs). Not part of the table; runs after it, before the stream row
  kafka            the stream row's hopping counts live over a Kafka topic of 4 partitions (1 M JSON
                   readings, ``--kafka-events``), bound as a partitioned input, against Spark's own
                   streaming aggregation with a watermark over the same topic, and the read-parse-write
                   floor; see benchmarks/kafka_stream.py. Only when named (``--only kafka``): it starts a Kafka
                   broker (or takes ``--bootstrap``) and needs Spark's Kafka connector of the running
                   PySpark from Maven Central (4.3.0 is not served: run it with .venv-pyspark-4.2, which
                   ``tests/kafka/run.py`` makes)

Each row also prints streamql's phases in its last run (wall time and Spark jobs per phase: the
worker check, the arrival order, the scan's summary and simulation, planning, the write) and the
baseline's job count.

``--check`` times nothing: for every row whose baseline has the same output rows (the new rows:
their CTIs flush, so every event is released and nothing is late) it compares, ignoring order
and with floats rounded to 9 digits, (1) the baseline and streamql against the reference
evaluator (the specification) on a tiny input, and (2) streamql's ``to_dataframe`` against the
baseline on ``--check-events`` events (20k). The ``alter`` rows are not comparable: without
flush, streamql holds back the events after the last CTI, which the baseline writes.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Sequence

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.window import Window

import streamql as sq
from streamql.query.nodes import Input
from streamql.spark.runtime.jobs import counting_jobs
from streamql.spark.runtime.phases import Phases, recording
from streamql.spark.runtime.workers import check_workers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import streaming  # noqa: E402 - benchmarks/streaming.py, beside this file
import kafka_stream  # noqa: E402 - benchmarks/kafka_stream.py, beside this file
from streamql.time import to_micros


@dataclass(frozen=True)
class Reading:
    meter: str
    consumption: float


@dataclass(frozen=True)
class Usage:
    meter: str
    kw: float


@dataclass(frozen=True)
class MeterAverage:
    meter: str
    average: float


@dataclass(frozen=True)
class Average:
    average: float


@dataclass(frozen=True)
class Hit:
    key: str


@dataclass(frozen=True)
class KeyCount:
    key: str
    count: int


@dataclass(frozen=True)
class MeterTop:
    meter: str
    consumption: float
    rank: int


@dataclass(frozen=True)
class Withdrawal:
    account: str
    amount: float


@dataclass(frozen=True)
class Twice:
    account: str
    first: float
    second: float


@dataclass(frozen=True)
class Order:
    order_id: int
    customer: str
    total: float


@dataclass(frozen=True)
class Payment:
    order_id: int


@dataclass(frozen=True)
class Click:
    user: str


@dataclass(frozen=True)
class UserSessions:
    user: str
    count: int


@dataclass(frozen=True)
class Left:
    key: str
    a: float


@dataclass(frozen=True)
class Right:
    key: str
    b: float


@dataclass(frozen=True)
class Pair:
    key: str
    a: float
    b: float


SLIDE = timedelta(minutes=3)
SLIDE_MICROS = 180_000_000


def readings(spark: SparkSession, n: int, partitions: int, late_every: int | None) -> DataFrame:
    """``n`` point readings generated in Spark, one per millisecond, slightly out of order
    (each start moves back by up to 0.6 ms); with ``late_every``, every such event arrives
    five seconds late, beyond the CTI delay."""
    ids = spark.range(0, n, 1, partitions)
    start = F.col("id") * 1000 - (F.col("id") % 7) * 100
    if late_every is not None:
        start = F.when(F.col("id") % late_every == 0, start - 5_000_000).otherwise(start)
    return ids.select(
        start.alias("ts"),
        F.concat(F.lit("m"), (F.col("id") % 1000).cast("string")).alias("meter"),
        (F.col("id") % 500).cast("double").alias("consumption"),
    )


def spread_points(spark: SparkSession, n: int, partitions: int, *, key: str, keys: int = 1000,
                  spacing: int = 10_000) -> DataFrame:
    """``n`` point events generated in Spark, one every ``spacing`` microseconds (10 ms: 5 M events
    span ~14 hours) over ``keys`` values of the string column ``key``, with a ``consumption`` that
    is a multiple of 0.25 (running sums of it are exact). Each start moves back by up to 0.6 ms,
    and every 10th event by one more ``spacing``, which puts it 0.1-0.6 ms before the event that
    arrived just before it: out of order, but within the 1 ms CTI delay, so none is dropped."""
    ids = spark.range(0, n, 1, partitions)
    start = F.col("id") * spacing - (F.col("id") % 7) * 100
    start = F.when(F.col("id") % 10 == 9, start - spacing).otherwise(start)
    return ids.select(
        start.alias("ts"),
        F.concat(F.lit(key[0]), (F.col("id") % keys).cast("string")).alias(key),
        ((F.col("id") % 400) * 0.25).alias("consumption"),
    )


def sides(spark: SparkSession, n: int, partitions: int, *, keys: int, spacing: int, duration: int,
          offset: int) -> DataFrame:
    """``n`` left and ``n`` right intervals in one DataFrame (``side`` 0 or 1), in start order per side:
    left ``i`` is ``[i*spacing, i*spacing + duration)``, right ``i`` the same moved by ``offset``;
    ``keys`` string keys round robin. ``a``/``b`` are multiples of 0.5."""
    ids = spark.range(0, 2 * n, 1, partitions)
    i, side = F.floor(F.col("id") / 2), F.col("id") % 2
    start = i * spacing + side * offset
    return ids.select(
        side.cast("int").alias("side"), start.alias("ts"), (start + duration).alias("te"),
        F.concat(F.lit("k"), (i % keys).cast("string")).alias("key"), ((i % 300) * 0.5).alias("v"))


def keyed_sides(spark: SparkSession, n: int, partitions: int) -> DataFrame:
    """Per key a left interval every 10 s lasting 5 s and a right one starting 3 s later: about two
    matches per event (10,000 keys, one event per millisecond per side)."""
    return sides(spark, n, partitions, keys=10_000, spacing=1_000, duration=5_000_000, offset=3_000_000)


def any_sides(spark: SparkSession, n: int, partitions: int) -> DataFrame:
    """A left interval every millisecond lasting 1.5 ms, a right one starting 0.5 ms later lasting as
    long: every event overlaps two or three of the other side's."""
    return sides(spark, n, partitions, keys=1, spacing=1_000, duration=1_500, offset=500)


def tiny_keyed_sides(spark: SparkSession) -> DataFrame:
    return sides(spark, 300, 2, keys=7, spacing=1_000_000, duration=5_000_000, offset=3_000_000)


def tiny_any_sides(spark: SparkSession) -> DataFrame:
    return sides(spark, 300, 2, keys=1, spacing=1_000, duration=1_500, offset=500)


def clicks(spark: SparkSession, n: int, partitions: int, *, keys: int = 10_000, spacing: int = 10_000) -> DataFrame:
    """``n`` clicks generated in Spark, one every ``spacing`` microseconds (10 ms: 5 M clicks span
    ~14 hours), out of order as in ``spread_points``; each click's user (``u0`` ...) drawn by a hash
    of its number, so that a user's clicks come at irregular times (every ``keys * spacing`` on
    average: 100 s) and form sessions of a few clicks with a gap of 3 minutes."""
    ids = spark.range(0, n, 1, partitions)
    start = F.col("id") * spacing - (F.col("id") % 7) * 100
    start = F.when(F.col("id") % 10 == 9, start - spacing).otherwise(start)
    user = F.pmod(F.xxhash64(F.col("id")), F.lit(keys))
    return ids.select(start.alias("ts"), F.concat(F.lit("u"), user.cast("string")).alias("user"))


def tiny_clicks(spark: SparkSession) -> DataFrame:
    """300 clicks of 5 users, one every 20 s: a user clicks every 100 s on average."""
    return clicks(spark, 300, 2, keys=5, spacing=20_000_000)


def withdrawals(spark: SparkSession, n: int, partitions: int, *, accounts: int = 10_000,
                spacing: int = 60_000) -> DataFrame:
    """``n`` withdrawals, one every ``spacing`` microseconds (60 ms: 1 M withdrawals span ~17 hours), out
    of order as in ``spread_points``; each one's account (``a0`` ...) and amount (a multiple of 0.5
    below 1,000) drawn by hashes of its number: an account withdraws every ``accounts * spacing`` on
    average (10 minutes). No two withdrawals start at one time (with ``spacing`` > 1.2 ms: a start
    moves back by less than 0.6 ms, or by ``spacing`` plus that, which puts it before the previous
    event's start, whose own move differs), so the next withdrawal of an account is its only
    earliest partner, as ``lead`` assumes."""
    ids = spark.range(0, n, 1, partitions)
    start = F.col("id") * spacing - (F.col("id") % 7) * 100
    start = F.when(F.col("id") % 10 == 9, start - spacing).otherwise(start)
    account = F.pmod(F.xxhash64(F.col("id")), F.lit(accounts))
    amount = F.pmod(F.xxhash64(F.col("id"), F.lit(1)), F.lit(2000)) * 0.5
    return ids.select(start.alias("ts"), F.concat(F.lit("a"), account.cast("string")).alias("account"),
                      amount.alias("amount"))


def tiny_withdrawals(spark: SparkSession) -> DataFrame:
    """300 withdrawals of 5 accounts, one every 2 minutes (10 hours): an account every 10 minutes on
    average."""
    return withdrawals(spark, 300, 2, accounts=5, spacing=120_000_000)


WITHIN_PAID = timedelta(minutes=15)
WITHIN_PAID_MICROS = 900_000_000


def orders_payments(spark: SparkSession, n: int, partitions: int, *, customers: int = 100_000,
                    spacing: int = 10_000) -> DataFrame:
    """``n`` orders (``side`` 0), one every ``spacing`` microseconds (10 ms: 1 M orders span ~2.8 hours)
    with order ids 0 .. n - 1, and their payments (``side`` 1) right after each order in the frame
    (the arrival order), at a delay drawn by a hash of the order id: 90 % of the orders are paid 1 s
    to less than 15 minutes later, 1 % exactly 15 minutes later (too late: the bound is half-open),
    4 % 15 to 25 minutes later, 5 % never. Each order's customer (``c0`` ...) is drawn by a hash,
    its total is a multiple of 0.25. The payments arrive up to 25 minutes out of time order:
    ``paying``'s CTIs lag by 30 minutes."""
    ids = spark.range(0, 2 * n, 1, partitions)
    order, side = F.floor(F.col("id") / 2), F.col("id") % 2
    fate = F.pmod(F.xxhash64(order), F.lit(100))
    drawn = F.xxhash64(order, F.lit(1))
    delay = (F.when(fate < 90, 1_000_000 + F.pmod(drawn, F.lit(WITHIN_PAID_MICROS - 1_000_000)))
             .when(fate == 90, F.lit(WITHIN_PAID_MICROS))
             .otherwise(WITHIN_PAID_MICROS + F.pmod(drawn, F.lit(600_000_000))))
    customer = F.concat(F.lit("c"), F.pmod(F.xxhash64(order, F.lit(2)), F.lit(customers)).cast("string"))
    rows = ids.select(side.cast("int").alias("side"), (order * spacing + side * delay).alias("ts"),
                      order.alias("order_id"), customer.alias("customer"), ((order % 400) * 0.25).alias("total"))
    return rows.filter((F.col("side") == 0) | (fate < 95))


def tiny_orders_payments(spark: SparkSession) -> DataFrame:
    """300 orders of 7 customers, one every 10 s (50 minutes), and their payments."""
    return orders_payments(spark, 300, 2, customers=7, spacing=10_000_000)


def meters(spark: SparkSession, n: int, partitions: int) -> DataFrame:
    return spread_points(spark, n, partitions, key="meter")


def hits(spark: SparkSession, n: int, partitions: int) -> DataFrame:
    return spread_points(spark, n, partitions, key="key")


def tiny_meters(spark: SparkSession) -> DataFrame:
    """300 events over 5 meters, one every 2 s (10 minutes): 3-minute lifetimes overlap ~90 deep."""
    return spread_points(spark, 300, 2, key="meter", keys=5, spacing=2_000_000)


def ranked_meters(spark: SparkSession, n: int, partitions: int) -> DataFrame:
    """``meters`` with each reading's consumption drawn by a hash of its start (a multiple of 0.25
    below 250): a meter's readings in one window seldom tie, so a top 3 is about 3 rows."""
    return _hashed_consumption(meters(spark, n, partitions))


def tiny_ranked_meters(spark: SparkSession) -> DataFrame:
    return _hashed_consumption(tiny_meters(spark))


def _hashed_consumption(source: DataFrame) -> DataFrame:
    return source.withColumn("consumption", (F.abs(F.hash(F.col("ts"))) % 1000) * 0.25)


def tiny_hits(spark: SparkSession) -> DataFrame:
    """300 events over 5 keys, one every 7 s (35 minutes): several 10-minute windows per key."""
    return spread_points(spark, 300, 2, key="key", keys=5, spacing=7_000_000)


# --- queries --------------------------------------------------------------------------------

def dropping() -> sq.AdvanceTimeSettings:
    return sq.AdvanceTimeSettings(
        generation=sq.AdvanceTimeGeneration(every_events=1000, delay=timedelta(milliseconds=1)),
        policy=sq.AdvanceTimePolicy.DROP,
    )


def flushing() -> sq.AdvanceTimeSettings:
    """Every event is released (the final CTI is INFINITY) and, with the input out of order by
    less than the delay, none is late: the baselines need no CTI logic."""
    return sq.AdvanceTimeSettings(
        generation=sq.AdvanceTimeGeneration(every_events=1000, delay=timedelta(milliseconds=1), flush=True))


def paying() -> sq.AdvanceTimeSettings:
    """``flushing`` with CTIs 30 minutes behind: the payments of ``orders_payments`` arrive up to 25
    minutes out of time order, and none is late."""
    return sq.AdvanceTimeSettings(
        generation=sq.AdvanceTimeGeneration(every_events=1000, delay=timedelta(minutes=30), flush=True))


Query = tuple[sq.Stream[Any], sq.Stream[Any]]  # (the input, the query)


def alter_query() -> Query:
    inp = sq.input("readings", Reading)
    q = (inp.where(lambda e: e.consumption > 10)
         .select(lambda e: Usage(e.meter, e.consumption / 1000))
         .alter_duration(SLIDE))
    return inp, q


def sliding_avg_query() -> Query:
    inp = sq.input("readings", Reading)
    q = (inp.alter_duration(SLIDE)
         .group_by(lambda e: e.meter)
         .snapshot_window()
         .select(lambda w: MeterAverage(w.key, w.avg(lambda e: e.consumption))))
    return inp, q


def sliding_avg_all_query() -> Query:
    inp = sq.input("readings", Reading)
    q = (inp.alter_duration(SLIDE)
         .snapshot_window()
         .select(lambda w: Average(w.avg(lambda e: e.consumption))))
    return inp, q


def hopping_count_query() -> Query:
    inp = sq.input("hits", Hit)
    q = (inp.group_by(lambda e: e.key)
         .hopping_window(timedelta(minutes=10), timedelta(minutes=1))
         .select(lambda w: KeyCount(w.key, w.count())))
    return inp, q


def top_k_query() -> Query:
    inp = sq.input("readings", Reading)
    q = (inp.group_by(lambda e: e.meter)
         .hopping_window(timedelta(minutes=10), timedelta(minutes=1))
         .top_k(3, lambda e: e.consumption, lambda e, rank: MeterTop(e.meter, e.consumption, rank)))
    return inp, q


WITHIN_TWICE = timedelta(minutes=10)
WITHIN_TWICE_MICROS = 600_000_000


def followed_by_query() -> Query:
    inp = sq.input("withdrawals", Withdrawal)
    q = inp.followed_by(inp, lambda a, b: a.account == b.account, lambda a, b: Twice(a.account, a.amount, b.amount),
                        within=WITHIN_TWICE)
    return inp, q


def not_followed_by_query() -> Query:
    orders = sq.input("orders", Order)
    payments = sq.input("payments", Payment)
    return orders, orders.not_followed_by(payments, lambda o, p: o.order_id == p.order_id, within=WITHIN_PAID)


def bind_orders_payments(spark: SparkSession, case: Case, source: DataFrame) -> tuple[sq.Binder, sq.Stream[Any]]:
    """The orders and the payments of ``orders_payments``, from its ``side`` column."""
    _, q = case.query()
    orders = source.filter(F.col("side") == 0).select("ts", "order_id", "customer", "total")
    payments = source.filter(F.col("side") == 1).select("ts", "order_id")
    binder = (sq.Binder(spark)
              .bind(sq.input("orders", Order), orders, start="ts", advance_time=case.settings())
              .bind(sq.input("payments", Payment), payments, start="ts", advance_time=case.settings()))
    return binder, q


def join_items(rows: list[Any]) -> dict[str, list[sq.Insert[Any]]]:
    """The join rows' two sides of one source (``sides``)."""
    return {"left": [sq.Insert(r["ts"], r["te"], Left(r["key"], r["v"])) for r in rows if r["side"] == 0],
            "right": [sq.Insert(r["ts"], r["te"], Right(r["key"], r["v"])) for r in rows if r["side"] == 1]}


def order_items(rows: list[Any]) -> dict[str, list[sq.Insert[Any]]]:
    """The orders and the payments of ``orders_payments``, as points."""
    return {"orders": [sq.Insert(r["ts"], r["ts"] + 1, Order(r["order_id"], r["customer"], r["total"]))
                       for r in rows if r["side"] == 0],
            "payments": [sq.Insert(r["ts"], r["ts"] + 1, Payment(r["order_id"])) for r in rows if r["side"] == 1]}


SESSION_GAP = "3 minutes"


def sessions_query() -> Query:
    inp = sq.input("clicks", Click)
    q = (inp.group_by(lambda e: e.user)
         .session_window(timedelta(minutes=3))
         .select(lambda w: UserSessions(w.key, w.count())))
    return inp, q


def join_query(on_key: bool) -> Callable[[], Query]:
    def query() -> Query:
        left = sq.input("left", Left, shape=sq.Shape.INTERVAL)
        right = sq.input("right", Right, shape=sq.Shape.INTERVAL)
        q = left.join(right, (lambda l, r: l.key == r.key) if on_key else None, lambda l, r: Pair(l.key, l.a, r.b))
        return left, q
    return query


def bind_sides(spark: SparkSession, case: Case, source: DataFrame) -> tuple[sq.Binder, sq.Stream[Any]]:
    """Both inputs of a join row, from the ``side`` column of one DataFrame."""
    _, q = case.query()
    inputs: list[tuple[sq.Stream[Any], int, str]] = [(sq.input("left", Left, shape=sq.Shape.INTERVAL), 0, "a"),
                                                     (sq.input("right", Right, shape=sq.Shape.INTERVAL), 1, "b")]
    binder = sq.Binder(spark)
    for stream, side, value in inputs:
        df = source.filter(F.col("side") == side).select("ts", "te", "key", F.col("v").alias(value),
                                                         *(["arrival"] if case.arrival else []))
        binder = binder.bind(stream, df, start="ts", end="te", advance_time=case.settings(),
                             arrival="arrival" if case.arrival else None)
    return binder, q


# --- hand-written baselines -----------------------------------------------------------------

def alter_baseline(source: DataFrame) -> DataFrame:
    return (source.filter(F.col("consumption") > 10)
            .select(F.timestamp_micros(F.col("ts")).alias("start"),
                    F.timestamp_micros(F.col("ts") + SLIDE_MICROS).alias("end"),
                    F.col("meter"), (F.col("consumption") / 1000).alias("kw")))


def late_split_baseline(source: DataFrame) -> DataFrame:
    """What a user writes to split late events off without CTI semantics: per block of 1,000 rows
    of a partition (in arrival order), the CTI is the greatest start of the blocks before less the
    delay; an event starting before its block's CTI is late. The alter output plus a ``late`` column."""
    index = F.col("arrival").bitwiseAND(F.lit((1 << 33) - 1))
    rows = source.select("*", F.shiftright(F.col("arrival"), 33).alias("p"), F.floor(index / 1000).alias("b"))
    blocks = rows.groupBy("p", "b").agg(F.max("ts").alias("m"))
    before = Window.orderBy("p", "b").rowsBetween(Window.unboundedPreceding, -1)
    ctis = blocks.select("p", "b", (F.max("m").over(before) - 1000).alias("cti"))  # one row per block
    marked = rows.join(F.broadcast(ctis), ["p", "b"])
    late = F.coalesce(F.col("ts") < F.col("cti"), F.lit(False))
    return (marked.filter(late | (F.col("consumption") > 10))
            .select(F.timestamp_micros(F.col("ts")).alias("start"),
                    F.timestamp_micros(F.col("ts") + SLIDE_MICROS).alias("end"),
                    F.col("meter"), (F.col("consumption") / 1000).alias("kw"), late.alias("late")))


def sweep_baseline(keys: Sequence[str]) -> Callable[[DataFrame], DataFrame]:
    """The expert's sliding average: +value at each start and -value at start + 3 min; running
    sums (value and count) over the endpoints in time order give what is alive on
    ``[t_i, t_{i+1})``. Without ``keys`` the window has no partitioning: Spark moves every
    endpoint to one partition."""
    def baseline(source: DataFrame) -> DataFrame:
        value = F.col("consumption")
        starts = source.select(*keys, F.col("ts").alias("t"), value.alias("dv"), F.lit(1).alias("dn"))
        ends = source.select(*keys, (F.col("ts") + SLIDE_MICROS).alias("t"), (-value).alias("dv"),
                             F.lit(-1).alias("dn"))
        order = Window.partitionBy(*keys).orderBy("t") if keys else Window.orderBy("t")
        # a RANGE frame takes in every endpoint at the same time (its peers) ...
        upto = order.rangeBetween(Window.unboundedPreceding, Window.currentRow)
        swept = starts.unionByName(ends).select(
            *keys, "t", F.sum("dv").over(upto).alias("s"), F.sum("dn").over(upto).alias("n"),
            F.lead("t").over(order).alias("next"))
        # ... and only the last of those peers has the next, later endpoint as its lead
        alive = swept.filter((F.col("n") > 0) & (F.col("next") > F.col("t")))
        return alive.select(F.timestamp_micros(F.col("t")).alias("start"),
                            F.timestamp_micros(F.col("next")).alias("end"),
                            *keys, (F.col("s") / F.col("n")).alias("average"))
    return baseline


def hopping_baseline(source: DataFrame) -> DataFrame:
    # window() puts a point in every window with start <= ts < end, as streamql does
    window = F.window(F.timestamp_micros(F.col("ts")), "10 minutes", "1 minute")
    counted = source.groupBy(window.alias("w"), F.col("key")).agg(F.count(F.lit(1)).alias("count"))
    return counted.select(F.col("w.start").alias("start"), F.col("w.end").alias("end"), "key", "count")


def top_k_baseline(source: DataFrame) -> DataFrame:
    # the windows of hopping_baseline, each meter's readings in a window ranked as SQL's RANK does
    window = F.window(F.timestamp_micros(F.col("ts")), "10 minutes", "1 minute")
    windowed = source.select(window.alias("w"), "meter", "consumption")
    rank = F.rank().over(Window.partitionBy("w", "meter").orderBy(F.col("consumption").desc()))
    ranked = windowed.select("*", rank.alias("rank")).filter(F.col("rank") <= 3)
    return ranked.select(F.col("w.start").alias("start"), F.col("w.end").alias("end"), "meter", "consumption",
                         F.col("rank").cast("long").alias("rank"))


def sessions_baseline(source: DataFrame) -> DataFrame:
    # Spark's session window of a click at ts is [ts, ts + gap], merged with the next when that
    # starts at or before its end: streamql's rule for a point [ts, ts + 1 us) and the same gap,
    # whose session ends one microsecond later
    window = F.session_window(F.timestamp_micros(F.col("ts")), SESSION_GAP)
    counted = source.groupBy(window.alias("w"), F.col("user")).agg(F.count(F.lit(1)).alias("count"))
    return counted.select(F.col("w.start").alias("start"),
                          F.timestamp_micros(F.unix_micros(F.col("w.end")) + 1).alias("end"), "user", "count")


def followed_by_baseline(source: DataFrame) -> DataFrame:
    """The next withdrawal of the account (``lead`` over the account in time order), kept when it
    comes less than 10 minutes later: a point at its start. Exact because no two withdrawals of an
    account start at one time (``withdrawals``)."""
    order = Window.partitionBy("account").orderBy("ts")
    paired = source.select("ts", "account", "amount", F.lead("ts").over(order).alias("next"),
                           F.lead("amount").over(order).alias("second"))
    close = paired.filter(F.col("next") - F.col("ts") < WITHIN_TWICE_MICROS)  # no next: null, dropped
    return close.select(F.timestamp_micros(F.col("next")).alias("start"),
                        F.timestamp_micros(F.col("next") + 1).alias("end"), "account",
                        F.col("amount").alias("first"), "second")


def not_followed_by_baseline(source: DataFrame) -> DataFrame:
    """The orders with no payment of their order id after them and less than 15 minutes after them
    (a left anti-join), each a point at its time + 15 minutes with its payload."""
    orders = source.filter(F.col("side") == 0).select("ts", "order_id", "customer", "total")
    payments = source.filter(F.col("side") == 1).select(F.col("ts").alias("paid"), F.col("order_id").alias("paid_id"))
    paid = ((F.col("order_id") == F.col("paid_id")) & (F.col("paid") > F.col("ts"))
            & (F.col("paid") < F.col("ts") + WITHIN_PAID_MICROS))
    unpaid = orders.join(payments, paid, "left_anti")
    return unpaid.select(F.timestamp_micros(F.col("ts") + WITHIN_PAID_MICROS).alias("start"),
                         F.timestamp_micros(F.col("ts") + (WITHIN_PAID_MICROS + 1)).alias("end"),
                         "order_id", "customer", "total")


def _join_sides(source: DataFrame) -> tuple[DataFrame, DataFrame]:
    left = source.filter(F.col("side") == 0).select(F.col("ts").alias("ls"), F.col("te").alias("le"), "key",
                                                    F.col("v").alias("a"))
    right = source.filter(F.col("side") == 1).select(F.col("ts").alias("rs"), F.col("te").alias("re"),
                                                     F.col("key").alias("rkey"), F.col("v").alias("b"))
    return left, right


def _pairs(joined: DataFrame) -> DataFrame:
    return joined.select(F.timestamp_micros(F.greatest("ls", "rs")).alias("start"),
                         F.timestamp_micros(F.least("le", "re")).alias("end"), "key", "a", "b")


def join_baseline(source: DataFrame) -> DataFrame:
    left, right = _join_sides(source)
    overlap = (F.col("key") == F.col("rkey")) & (F.col("ls") < F.col("re")) & (F.col("rs") < F.col("le"))
    return _pairs(left.join(right, overlap))


BUCKET = 1_000


def join_any_baseline(source: DataFrame) -> DataFrame:
    """The expert's overlap join without keys: 1 ms buckets, each interval in every bucket it
    overlaps, a pair kept only in the bucket holding the start of its intersection."""
    left, right = _join_sides(source)

    def bucketed(df: DataFrame, s: str, e: str) -> DataFrame:
        return df.select("*", F.explode(F.sequence(F.floor(F.col(s) / BUCKET), F.floor((F.col(e) - 1) / BUCKET)))
                         .alias(f"{s}_bucket"))
    joined = bucketed(left, "ls", "le").join(bucketed(right, "rs", "re"), F.col("ls_bucket") == F.col("rs_bucket"))
    kept = joined.filter((F.col("ls") < F.col("re")) & (F.col("rs") < F.col("le"))
                         & (F.col("ls_bucket") == F.floor(F.greatest("ls", "rs") / BUCKET)))
    return _pairs(kept)


def as_of_sides(spark: SparkSession, n: int, partitions: int) -> DataFrame:
    """Trades (``side`` 0) and quotes (1) as points, one of each per millisecond over 1,000 symbols:
    a symbol trades every second and is quoted 0.3 ms after each of its trades."""
    return sides(spark, n, partitions, keys=1_000, spacing=1_000, duration=1, offset=300)


def tiny_as_of_sides(spark: SparkSession) -> DataFrame:
    return sides(spark, 300, 2, keys=7, spacing=1_000_000, duration=1, offset=300_000)


def as_of_query() -> Query:
    trades = sq.input("left", Left, shape=sq.Shape.INTERVAL)
    quotes = sq.input("right", Right, shape=sq.Shape.INTERVAL)
    return trades, trades.as_of_join(quotes, lambda t, q: t.key == q.key, lambda t, q: Pair(t.key, t.a, q.b))


def as_of_baseline(source: DataFrame) -> DataFrame:
    """The expert's as-of join: both sides in one frame, a window per key in time order (quotes
    before trades at one instant) carrying the last quote to every trade."""
    rows = source.select("side", "ts", "te", "key", "v")
    upto = Window.partitionBy("key").orderBy("ts", F.col("side").desc()).rowsBetween(Window.unboundedPreceding,
                                                                                      Window.currentRow)
    last = F.last(F.when(F.col("side") == 1, F.col("v")), ignorenulls=True).over(upto)
    trades = rows.select("*", last.alias("b")).filter((F.col("side") == 0) & F.col("b").isNotNull())
    return trades.select(F.timestamp_micros(F.col("ts")).alias("start"), F.timestamp_micros(F.col("te")).alias("end"),
                         "key", F.col("v").alias("a"), "b")


# --- rows -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One row of the table."""

    name: str
    label: str  # "{events}" becomes e.g. "5 M"
    events: int  # the default number of events
    source: Callable[[SparkSession, int, int], DataFrame]  # (spark, events, partitions)
    query: Callable[[], Query]
    settings: Callable[[], sq.AdvanceTimeSettings]
    baseline: Callable[[DataFrame], DataFrame]
    payload: type[Any]
    tiny: Callable[[SparkSession], DataFrame] | None = None  # set when the outputs are comparable
    show_tasks: bool = False
    #: binds the inputs when the row has several (default: ``query``'s input to the whole source)
    bind: Callable[[SparkSession, Case, DataFrame], tuple[sq.Binder, sq.Stream[Any]]] | None = None
    #: the reference evaluator's events of each input, from the source's rows in arrival order, when
    #: the row binds several inputs (default: ``join_items``, the two sides of the join rows)
    items: Callable[[list[Any]], dict[str, list[sq.Insert[Any]]]] | None = None
    scaling: bool = False  # also time streamql at twice the events
    #: bind an explicit arrival column (``arrival``: the row number, i.e. partition order)
    arrival: bool = False
    #: the rows are spread over the partitions again after the arrival column is taken (a
    #: round-robin repartition): the arrival column is out of storage order and gets numbered
    shuffled: bool = False
    #: the source is cached and materialized before the timed runs (a notebook's reused input)
    cached: bool = False
    #: streamql also writes the late records (``late_path``); the baseline's output has a ``late``
    #: column and is written partitioned by it
    late: bool = False


CASES = [
    Case("alter", "{events} points: where+select+alter_duration, CTI every 1000, DROP -> parquet", 10_000_000,
         lambda spark, n, p: readings(spark, n, p, None), alter_query, dropping, alter_baseline, Reading),
    Case("alter-late", "  same, 1 in 10,000 events 5 s late (DROP removes them: every scan unit simulated)",
         10_000_000, lambda spark, n, p: readings(spark, n, p, 10_000), alter_query, dropping, alter_baseline,
         Reading),
    Case("sliding-avg", "{events} points, 1000 meters: alter_duration(3 min), grouped snapshot avg "
         "(baseline: endpoint sweep)", 5_000_000, meters, sliding_avg_query, flushing, sweep_baseline(["meter"]),
         Reading, tiny_meters),
    Case("sliding-avg-all", "  same, ungrouped snapshot (baseline: sweep as a single-partition window)",
         5_000_000, meters, sliding_avg_all_query, flushing, sweep_baseline([]), Reading, tiny_meters,
         show_tasks=True),
    Case("hopping-count", "{events} points, 1000 keys: grouped hopping_window(10 min, 1 min) count "
         "(baseline: F.window)", 5_000_000, hits, hopping_count_query, flushing, hopping_baseline, Hit,
         tiny_hits),
    Case("join", "{events} x {events} intervals, 10,000 keys: temporal equi-join (baseline: key join + "
         "overlap filter)", 1_000_000, keyed_sides, join_query(True), flushing, join_baseline, Pair,
         tiny_keyed_sides, bind=bind_sides),
    Case("join-any", "{events} x {events} intervals: join on=None (baseline: 1 ms buckets)", 200_000, any_sides,
         join_query(False), flushing, join_any_baseline, Pair, tiny_any_sides, bind=bind_sides, scaling=True),
    Case("top-k", "{events} points, 1000 meters: grouped hopping_window(10 min, 1 min).top_k(3) (baseline: "
         "F.window + rank())", 5_000_000, ranked_meters, top_k_query, flushing, top_k_baseline, Reading,
         tiny_ranked_meters),
    Case("followed-by", "{events} withdrawals, 10,000 accounts: followed_by the same account within 10 min "
         "(baseline: lead() + filter)", 1_000_000, withdrawals, followed_by_query, flushing, followed_by_baseline,
         Withdrawal, tiny_withdrawals),
    Case("not-followed-by", "{events} orders + 0.95 x as many payments: not_followed_by payment within 15 min "
         "(baseline: left anti-join)", 1_000_000, orders_payments, not_followed_by_query, paying,
         not_followed_by_baseline, Order, tiny_orders_payments, bind=bind_orders_payments,
         items=order_items),
    Case("sessions", "{events} clicks, 10,000 users: grouped session_window(3 min) count (baseline: Spark's "
         "session_window)", 5_000_000, clicks, sessions_query, flushing, sessions_baseline, Click, tiny_clicks),
    Case("late-records", "  as alter-late, arrival column, late records written too (baseline: CTI per block "
         "of 1,000 rows)", 10_000_000, lambda spark, n, p: readings(spark, n, p, 10_000), alter_query, dropping,
         late_split_baseline, Reading, arrival=True, late=True),
    Case("alter-arrival", "  as alter, with an explicit arrival column (in partition order; baseline: filter + "
         "projection)", 10_000_000, lambda spark, n, p: readings(spark, n, p, None), alter_query, dropping,
         alter_baseline, Reading, arrival=True),
    Case("alter-shuffled", "{events} points as alter, arrival column out of storage order (numbered; "
         "baseline: filter + projection)", 5_000_000, lambda spark, n, p: readings(spark, n, p, None), alter_query,
         dropping, alter_baseline, Reading, arrival=True, shuffled=True),
    Case("cached-sliding-avg", "{events} points cached, arrival column: grouped sliding avg (baseline: sweep)",
         2_000_000, meters, sliding_avg_query, flushing, sweep_baseline(["meter"]), Reading, tiny_meters,
         arrival=True, cached=True),
    Case("cached-hopping", "{events} points cached, arrival column: grouped hopping counts (baseline: F.window)",
         2_000_000, hits, hopping_count_query, flushing, hopping_baseline, Hit, tiny_hits, arrival=True,
         cached=True),
    Case("cached-join", "{events} x {events} intervals cached, arrival column, 10,000 keys: equi-join "
         "(baseline: key join + overlap filter)", 500_000, keyed_sides, join_query(True), flushing, join_baseline,
         Pair, tiny_keyed_sides, bind=bind_sides, arrival=True, cached=True),
    Case("as-of", "{events} x {events} points, 1,000 symbols: as_of_join (baseline: window over the union of "
         "both sides)", 2_000_000, as_of_sides, as_of_query, flushing, as_of_baseline, Pair, tiny_as_of_sides,
         bind=bind_sides),
]


def binding(spark: SparkSession, case: Case, source: DataFrame) -> tuple[sq.Binder, sq.Stream[Any]]:
    if case.bind is not None:
        return case.bind(spark, case, source)
    inp, q = case.query()
    return sq.Binder(spark).bind(inp, source, start="ts", advance_time=case.settings(),
                                 arrival="arrival" if case.arrival else None), q


def row_source(spark: SparkSession, case: Case, events: int, partitions: int) -> DataFrame:
    """The row's input: with an ``arrival`` column (the row number: partition order) if the row
    binds one (spread over the partitions again if it says ``shuffled``), cached and materialized
    if the row says so."""
    source = case.source(spark, events, partitions)
    if case.arrival:
        source = source.withColumn("arrival", F.monotonically_increasing_id())
        if case.shuffled:
            source = source.repartition(partitions)
    if case.cached:
        source = source.cache()
        source.count()
    return source


#: the phases of each row's last streamql run (``--only`` row name -> phases)
PHASES: dict[str, Phases] = {}


def streamql_job(spark: SparkSession, case: Case, source: DataFrame, out: str) -> None:
    binder, q = binding(spark, case, source)
    with recording(spark) as phases:
        result = binder.write(q, out, mode="overwrite", late_path=f"{out}-late" if case.late else None)
    PHASES[case.name] = phases
    if case.tiny is not None and result.dropped:  # the baseline would not be the same job
        raise AssertionError(f"{case.name}: streamql dropped {result.dropped} late events")


#: the Spark jobs of each row's last baseline run
BASELINE_JOBS: dict[str, int | None] = {}


def baseline_job(case: Case, source: DataFrame, out: str) -> None:
    with counting_jobs(source.sparkSession, f"baseline {case.name}") as jobs:
        written = case.baseline(source).write.mode("overwrite")
        if case.late:
            written = written.partitionBy("late")
        written.parquet(out)
    BASELINE_JOBS[case.name] = jobs.jobs


def best_of(repeat: int, job: Callable[[str], None]) -> float:
    times = []
    for _ in range(repeat):
        out = tempfile.mkdtemp(prefix="streamql-bench-")
        try:
            began = time.perf_counter()
            job(out)
            times.append(time.perf_counter() - began)
        finally:
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(f"{out}-late", ignore_errors=True)  # a late-records row's records
    return min(times)


# --- many queries over one scan -----------------------------------------------------------


@dataclass(frozen=True)
class Count:
    count: int


def meter_count(readings: sq.Stream[Reading], meter: str) -> sq.Stream[Count]:
    return (readings.where(lambda e: e.meter == meter)
            .hopping_window(timedelta(minutes=10), timedelta(minutes=1))
            .select(lambda w: Count(w.count())))


def many_baseline(source: DataFrame, meters: list[str]) -> list[Any]:
    """The expert's job for all the meters at once: one filter, Spark's window() per meter."""
    window = F.window(F.timestamp_micros(F.col("ts")), "10 minutes", "1 minute")
    counted = source.filter(F.col("meter").isin(meters)).groupBy(window.alias("w"), "meter").count()
    return counted.select(F.col("w.start").alias("start"), F.col("w.end").alias("end"), "meter", "count").collect()


def many_queries(spark: SparkSession, events: int, partitions: int, count: int, repeat: int) -> list[str]:
    """The ``many`` row: its lines of output."""
    source = meters(spark, events, partitions)
    readings_input = sq.input("readings", Reading)
    binding = sq.Binder(spark).bind(readings_input, source, start="ts", advance_time=flushing())
    queries: dict[str, sq.Stream[Any]] = {f"m{i}": meter_count(readings_input, f"m{i}") for i in range(count)}
    first = queries["m0"]
    outcome: dict[str, Any] = {}

    def timed(runs: int, job: Callable[[], Any], key: str) -> float:
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            outcome[key] = job()
            times.append(time.perf_counter() - began)
        return min(times)

    together = timed(repeat, lambda: binding.run_many(queries), "together")
    alone = timed(repeat, lambda: binding.run(first), "alone")
    one_by_one = timed(1, lambda: {name: binding.run(q) for name, q in queries.items()}, "one by one")
    if outcome["together"] != outcome["one by one"] or outcome["together"]["m0"] != outcome["alone"]:
        raise AssertionError("many: run_many does not return what run returns")
    def write_all(out: str) -> None:
        binding.write_many(queries, {name: os.path.join(out, name) for name in queries})

    written = best_of(repeat, write_all)
    baseline = timed(repeat, lambda: many_baseline(source, list(queries)), "baseline")
    label = f"{events / 1e6:g} M"
    return [
        f"many: {count} queries over {label} readings, each where(meter == m_i) + hopping_window(10 min, 1 min) "
        "count, collected",
        f"  together (run_many)                 {together:8.2f} s  = {together / alone:5.2f} x one alone "
        "(target <= 3)",
        f"  one alone (run)                     {alone:8.2f} s",
        f"  one after another ({count} x run, once)  {one_by_one:8.2f} s  = {one_by_one / together:5.2f} x together",
        f"  together, written (write_many)      {written:8.2f} s",
        f"  hand-written PySpark, all in one job {baseline:7.2f} s  (F.window, no CTIs)",
    ]


# --- tasks per stage ------------------------------------------------------------------------

def in_job_groups(spark: SparkSession, prefix: str, job: Callable[[str], None],
                  groups: list[str]) -> Callable[[str], None]:
    """``job`` with the Spark jobs of each run in a job group of their own (a thread-local
    property), whose names it appends to ``groups``."""
    def tagged(out: str) -> None:
        groups.append(f"{prefix}-{len(groups)}")
        spark.sparkContext.setJobGroup(groups[-1], groups[-1])
        try:
            job(out)
        finally:
            spark.sparkContext._jsc.clearJobGroup()
    return tagged


def stage_tasks(spark: SparkSession, group: str) -> str:
    """The tasks of each stage that ran, per job of ``group`` (with adaptive execution every query
    stage is a job of its own), e.g. ``job 12: [8] | job 13: [1]; 1 of 2 stages ran > 1 task``."""
    tracker = spark.sparkContext.statusTracker()
    jobs, stages = [], []
    for job in sorted(tracker.getJobIdsForGroup(group)):
        info = tracker.getJobInfo(job)
        if info is None:
            continue
        tasks = []
        for stage_id in sorted(info.stageIds):
            stage = tracker.getStageInfo(stage_id)
            if stage is not None and stage.numCompletedTasks > 0:  # skipped stages reused a shuffle
                tasks.append(stage.numTasks)
        jobs.append(f"job {job}: {tasks}")
        stages.extend(tasks)
    parallel = sum(1 for t in stages if t > 1)
    return f"{' | '.join(jobs)}; {parallel} of {len(stages)} stages ran > 1 task"


# --- --check --------------------------------------------------------------------------------

Rows = Counter[tuple[Any, ...]]


def _rounded(value: Any) -> Any:
    return round(value, 9) if isinstance(value, float) else value


def rows_of(df: DataFrame) -> tuple[list[tuple[str, str]], Rows]:
    """The columns and types, and the rows (timestamps as microseconds, floats rounded)."""
    micros = [F.unix_micros(F.col(c)).alias(c) if t == "timestamp" else F.col(c) for c, t in df.dtypes]
    return df.dtypes, Counter(tuple(_rounded(v) for v in row) for row in df.select(*micros).collect())


def reference_rows(case: Case, source: DataFrame) -> Rows:
    """The specification: ``sq.reference.run`` over the same events, in the same arrival order."""
    inp, q = case.query()
    assert isinstance(inp.node, Input)
    rows = source.collect()  # partition order: the binder's arrival order
    inputs: dict[str, sq.reference.ReferenceInput[Any]]
    if case.bind is not None:  # several inputs from one source
        sides = (case.items or join_items)(rows)
        inputs = {name: sq.reference.ReferenceInput(items, case.settings()) for name, items in sides.items()}
    else:
        fields = [f.name for f in dataclasses.fields(case.payload)]
        items = [sq.Insert(row["ts"], row["ts"] + 1, case.payload(**{f: row[f] for f in fields})) for row in rows]
        inputs = {inp.node.name: sq.reference.ReferenceInput(items, case.settings())}
    result = sq.reference.run(q, inputs)
    return Counter((to_micros(e.start), to_micros(e.end), *(_rounded(v) for v in dataclasses.astuple(e.payload)))
                   for e in result.events)


def compare_rows(ours: Rows, theirs: Rows) -> bool:
    """Whether the two multisets of rows are equal; prints the difference (first / second)."""
    missing, extra = theirs - ours, ours - theirs
    if not missing and not extra:
        print(f"ok    {sum(ours.values())} rows equal")
        return True
    print(f"FAIL  {sum(ours.values())} vs {sum(theirs.values())} rows; "
          f"{sum(extra.values())} only in the first, {sum(missing.values())} only in the second")
    for label, rows in (("only in the first ", extra), ("only in the second", missing)):
        for row in sorted(rows, key=repr)[:5]:
            print(f"        {label}: {row}")
    return False


def compare_typed(ours: tuple[list[tuple[str, str]], Rows], theirs: tuple[list[tuple[str, str]], Rows]) -> bool:
    """``compare_rows``, and the columns and their types must be equal too."""
    same_columns = ours[0] == theirs[0]
    if not same_columns:
        print(f"FAIL  columns differ: {ours[0]} vs {theirs[0]}")
    return compare_rows(ours[1], theirs[1]) and same_columns


def check(spark: SparkSession, case: Case, events: int, partitions: int) -> bool:
    assert case.tiny is not None
    tiny = case.tiny(spark)
    if case.arrival:
        tiny = tiny.withColumn("arrival", F.monotonically_increasing_id())
    n = tiny.count()
    spec = reference_rows(case, tiny)

    def streamql_rows(source: DataFrame) -> tuple[list[tuple[str, str]], Rows]:
        binder, q = binding(spark, case, source)
        return rows_of(binder.to_dataframe(q))

    def against_baseline() -> bool:
        source = row_source(spark, case, events, partitions)
        return compare_typed(streamql_rows(source), rows_of(case.baseline(source)))

    steps: list[tuple[str, Callable[[], bool]]] = [
        (f"baseline vs reference ({n} events)", lambda: compare_rows(rows_of(case.baseline(tiny))[1], spec)),
        (f"streamql vs reference ({n} events)", lambda: compare_rows(streamql_rows(tiny)[1], spec)),
        (f"streamql vs baseline ({events} events)", against_baseline),
    ]
    ok = True
    for what, step in steps:
        print(f"      {case.name}: {what} ...", flush=True)
        try:
            ok = step() and ok
        except Exception as exc:  # report the failure and go on with the other comparisons
            print(f"FAIL  {case.name}: {what}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            ok = False
    return ok


# --- main -----------------------------------------------------------------------------------

def session(app: str, jars: Sequence[str] = ()) -> SparkSession:
    """The benchmarks' session: ``local[2]``, 8 shuffle partitions, UTC, a 4 GiB driver, quiet;
    ``jars`` on ``spark.jars``."""
    builder = SparkSession.builder.master("local[2]").appName(app)
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    spark = (builder
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "4g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=None, help="events per row (default: each row's own)")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=None, help="comma-separated row names: " + ", ".join(c.name for c in CASES))
    parser.add_argument("--check", action="store_true", help="compare outputs instead of timing")
    parser.add_argument("--check-events", type=int, default=20_000)
    parser.add_argument("--stream-files", type=int, default=10, help="micro-batches of the stream row")
    parser.add_argument("--stream-batch", type=int, default=100_000, help="events per micro-batch of the stream row")
    parser.add_argument("--queries", type=int, default=50, help="queries of the many row")
    parser.add_argument("--kafka-events", type=int, default=1_000_000, help="events of the kafka row's topic")
    parser.add_argument("--kafka-per-trigger", type=int, default=100_000, help="offsets per micro-batch (kafka row)")
    parser.add_argument("--bootstrap", default=None, help="the kafka row's broker (default: one of its own)")
    args = parser.parse_args()
    cases = CASES
    streaming_row = True
    many_row = True
    kafka_row = False
    if args.only is not None:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(names) - {c.name for c in CASES} - {"stream", "many", "kafka"})
        if unknown:
            parser.error(f"unknown rows {', '.join(unknown)}; rows are {', '.join(c.name for c in CASES)}, many, "
                         "stream, kafka")
        cases = [c for c in CASES if c.name in names]
        streaming_row = "stream" in names
        many_row = "many" in names
        kafka_row = "kafka" in names
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers use this interpreter
    spark = session("streamql-benchmarks", kafka_stream.jars() if kafka_row else ())
    check_workers(spark)  # the binder's one job per session, here rather than in the first timed run
    try:
        if args.check:
            results = []
            for case in cases:
                if case.tiny is None:
                    print(f"skip  {case.name}: the baseline does not hold back unreleased events")
                else:
                    results.append(check(spark, case, args.check_events, args.partitions))
            return 0 if all(results) else 1
        rows: list[tuple[str, float, float]] = []
        notes: list[str] = []
        for case in cases:
            events = args.events if args.events is not None else case.events
            source = row_source(spark, case, events, args.partitions)
            ours: Callable[[str], None] = functools.partial(streamql_job, spark, case, source)
            theirs: Callable[[str], None] = functools.partial(baseline_job, case, source)
            ours_groups: list[str] = []
            theirs_groups: list[str] = []
            if case.show_tasks:
                ours = in_job_groups(spark, f"streamql-{case.name}", ours, ours_groups)
                theirs = in_job_groups(spark, f"baseline-{case.name}", theirs, theirs_groups)
            ours_s = best_of(args.repeat, ours)
            theirs_s = best_of(args.repeat, theirs)
            rows.append((case.label.format(events=f"{events / 1e6:g} M"), ours_s, theirs_s))
            notes.append(f"{case.name}, streamql's phases (last run, {PHASES[case.name].jobs} jobs): "
                         f"{PHASES[case.name].table()}; baseline: {BASELINE_JOBS[case.name]} jobs")
            if case.cached:
                source.unpersist()
            if case.scaling:
                doubled = case.source(spark, 2 * events, args.partitions)
                twice = best_of(args.repeat, functools.partial(streamql_job, spark, case, doubled))
                notes.append(f"{case.name}, streamql at {2 * events / 1e6:g} M x {2 * events / 1e6:g} M: "
                             f"{twice:.2f} s = {twice / ours_s:.2f} x the time at {events / 1e6:g} M")
            if case.show_tasks:
                notes.append(f"{case.name}, tasks per stage that ran (last run), streamql: "
                             f"{stage_tasks(spark, ours_groups[-1])}")
                notes.append(f"{case.name}, tasks per stage that ran (last run), baseline: "
                             f"{stage_tasks(spark, theirs_groups[-1])}")
        if rows:
            width = max(len(r[0]) for r in rows)
            print(f"\n{'benchmark'.ljust(width)}  streamql s  baseline s  ratio")
            for label, ours_s, theirs_s in rows:
                print(f"{label.ljust(width)}  {ours_s:10.2f}  {theirs_s:10.2f}  {ours_s / theirs_s:5.2f}")
        for note in notes:
            print(note)
        if many_row and not args.check:
            print()
            events = args.events if args.events is not None else 5_000_000
            for line in many_queries(spark, events, args.partitions, args.queries, args.repeat):
                print(line)
        if streaming_row:
            print()
            for line in streaming.run(spark, meters, args.stream_files, args.stream_batch):
                print(line)
        if kafka_row:
            print()
            for line in kafka_stream.run(spark, args.kafka_events, args.kafka_per_trigger, args.bootstrap):
                print(line)
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    raise SystemExit(main())
