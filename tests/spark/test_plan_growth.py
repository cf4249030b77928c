"""Plans grow without a factor per operator (docs/architecture.md#plans-grow-linearly): each operator's
projection adds a bounded piece of plan; the filter of an operator that drops events
(``alter_lifetime``, ``shift``, ``alter_duration``, ``to_point``, ``where``) is pushed down by Catalyst
through the projections before it, each time with their expressions inlined, so the ``k``-th filter
costs ``O(k)`` — the plan of ``n`` operators is at most quadratic in ``n``. Measured by the printed
length of the optimized plan (a classic session's ``queryExecution``) over chains of 0, ``n`` and
``2n`` operators: the second ``n`` operators add at most three times what the first ``n`` did (a
quadratic plan's ratio; a saturating shift referring to its time three times grew the second half
3^n times the first), and before a window 6 shifts stay within a bound the tripling passed 50-fold.
Each chain's result equals the reference evaluator's. Linear growth needs a barrier that stops the
push-down (not yet: the issue's item 3 is open for it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest
from pyspark.sql import SparkSession

import streamql as sq
from streamql.spark.runtime.connect import is_connect
from support.frames import bind, frame


@dataclass(frozen=True)
class Reading:
    k: int
    v: int


@dataclass(frozen=True)
class Total:
    key: int
    n: int
    total: int


SOURCE = sq.input("readings", Reading, shape=sq.Shape.INTERVAL)
SETTINGS = sq.AdvanceTimeSettings(sq.AdvanceTimeGeneration(every_events=5, flush=True),
                                  policy=sq.AdvanceTimePolicy.DROP)
#: the printed plan of one shift: its two moved times (about 700 characters) and its filter, pushed
#: down through the operators before it (about 250 characters per operator below)
PER_OPERATOR = 700
PER_OPERATOR_BELOW = 250

Step = Callable[[sq.Stream[Reading]], sq.Stream[Reading]]
STEPS: dict[str, Step] = {
    "where": lambda q: q.where(lambda e: e.v % 7 != 3),
    "select": lambda q: q.select(lambda e: Reading(e.k, e.v + 1)),
    "alter_duration": lambda q: q.alter_duration(sq.TICK * 9),
    "alter_lifetime": lambda q: q.alter_lifetime(sq.TICK * 2, sq.TICK * 20),
    "shift": lambda q: q.shift(sq.TICK * 3),
    "shift_back": lambda q: q.shift(-sq.TICK * 2),
    "to_point": lambda q: q.to_point(),
}


def items() -> list[sq.Insert[Reading]]:
    """30 overlapping intervals in start order, some of them open."""
    return [sq.Insert(100 + 7 * i, sq.INFINITY if i % 11 == 5 else 130 + 7 * i, Reading(i % 3, i)) for i in range(30)]


def binder(spark: SparkSession) -> sq.Binder:
    df = frame(spark, Reading, sq.Shape.INTERVAL, items(), partitions=2)
    return bind(sq.Binder(spark), SOURCE, df, sq.Shape.INTERVAL, SETTINGS)


def plan_size(b: sq.Binder, q: sq.Stream[Any]) -> int:
    """The printed length of the optimized plan of ``q`` (a classic session's)."""
    df = b.to_dataframe(q)
    return len(df._jdf.queryExecution().optimizedPlan().toString())


def chain(q: sq.Stream[Reading], steps: list[Step], n: int) -> sq.Stream[Reading]:
    for i in range(n):
        q = steps[i % len(steps)](q)
    return q


def assert_no_factor_per_step(sizes: dict[int, int], n: int) -> None:
    """Sizes at 0, ``n`` and ``2n`` operators: the second ``n`` add at most three times what the first
    did (``a*n + b*n^2`` gives less than 3), each operator a bounded amount plus one per operator below it."""
    first, second = sizes[n] - sizes[0], sizes[2 * n] - sizes[n]
    assert second <= 3 * first + 500, f"the plan grows by a factor per operator: {sizes}"
    bound = sum(PER_OPERATOR + k * PER_OPERATOR_BELOW for k in range(n, 2 * n)) * 4
    assert second <= bound, f"more than {PER_OPERATOR} + {PER_OPERATOR_BELOW} per operator below, times 4: {sizes}"


def reference(q: sq.Stream[Any]) -> sq.Result[Any]:
    return sq.reference.run(q, {"readings": sq.reference.ReferenceInput(items(), SETTINGS)})




@pytest.fixture
def classic(spark: SparkSession) -> SparkSession:
    if is_connect(spark):
        pytest.skip("the optimized plan is read from a classic session's queryExecution")
    return spark


@pytest.mark.slow
def test_chained_stateless_operators_of_every_kind_grow_the_plan_without_a_factor(classic: SparkSession) -> None:
    b = binder(classic)
    steps = list(STEPS.values())
    sizes = {n: plan_size(b, chain(SOURCE, steps, n)) for n in (0, 6, 12)}
    assert_no_factor_per_step(sizes, 6)
    q = chain(SOURCE, steps, 12)
    assert b.run(q) == reference(q)


def test_six_shifts_give_a_plan_of_a_few_operators_size(classic: SparkSession) -> None:
    """The issue's measurement: 1-6 shifts over 30 events gave 5.3 k ... 587 k characters (x3 a shift)."""
    b = binder(classic)
    sizes = [plan_size(b, chain(SOURCE, [STEPS["shift"]], n)) for n in (0, 6)]
    assert sizes[1] - sizes[0] <= 6 * (PER_OPERATOR + 6 * PER_OPERATOR_BELOW) * 2, sizes


@pytest.mark.slow
def test_twenty_chained_stateless_operators_of_every_kind_grow_the_plan_without_a_factor(classic: SparkSession) -> None:
    # 20, not the 40: the plan still grows with the square of the operators (see below)
    b = binder(classic)
    steps = list(STEPS.values())
    sizes = {n: plan_size(b, chain(SOURCE, steps, n)) for n in (0, 10, 20)}
    assert_no_factor_per_step(sizes, 10)
    q = chain(SOURCE, steps, 20)
    assert b.run(q) == reference(q)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(STEPS))
def test_twenty_operators_of_one_kind_grow_the_plan_without_a_factor(classic: SparkSession, kind: str) -> None:
    # 20, not the 40: the plan still grows with the square of the operators (a filter pushed
    # down through k operators is copied k deep), and 40 shifts took over 13 minutes to plan and run
    b = binder(classic)
    sizes = {n: plan_size(b, chain(SOURCE, [STEPS[kind]], n)) for n in (0, 10, 20)}
    assert_no_factor_per_step(sizes, 10)
    q = chain(SOURCE, [STEPS[kind]], 20)
    assert b.run(q) == reference(q)


def grouped_window(q: sq.Stream[Reading]) -> sq.Stream[Total]:
    return q.group_by(lambda e: e.k).tumbling_window(sq.TICK * 50).select(
        lambda w: Total(w.key, w.count(), w.sum(lambda e: e.v)))


@pytest.mark.slow
def test_shifts_and_alter_lifetimes_before_a_grouped_window_grow_the_plan_without_a_factor(
        classic: SparkSession) -> None:
    b = binder(classic)
    steps = [STEPS["shift"], STEPS["alter_lifetime"], STEPS["shift_back"]]
    sizes = {n: plan_size(b, grouped_window(chain(SOURCE, steps, n))) for n in (0, 10, 20)}
    # the window refers to the times several times (its filters too are pushed down)
    assert sizes[20] - sizes[10] <= 3 * (sizes[10] - sizes[0]) + 500, sizes
    q = grouped_window(chain(SOURCE, steps, 20))
    assert b.run(q) == reference(q)


@pytest.mark.slow
def test_a_query_unioned_with_itself_shifted_about_doubles_the_plan(classic: SparkSession) -> None:
    """A union holds both plans: twice the query's, and the shift's filter pushed down through the
    query's operators (a tripling shift made the shifted side three times the query)."""
    b = binder(classic)
    q = chain(SOURCE, [STEPS["shift"], STEPS["where"], STEPS["alter_lifetime"]], 12)
    both = q.union(q.shift(sq.TICK * 5))
    alone, union = plan_size(b, q), plan_size(b, both)
    assert union <= 2 * alone + PER_OPERATOR + 12 * PER_OPERATOR_BELOW * 2, (alone, union)
    assert b.run(both) == reference(both)


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_the_saturating_shift_equals_time_shift_at_the_edges(spark: SparkSession, ansi: str) -> None:
    """``flow.shifted`` (one reference to its time) is ``streamql.time.shift`` at the least and greatest
    times, INFINITY and the largest shifts both ways, by a constant and by a column, with ANSI
    arithmetic or not (no step overflows); a null time gives MIN, as the three-branch form did."""
    from pyspark.sql import functions as F

    from streamql.spark.operators.flow import shifted
    from streamql.time import INFINITY_MICROS, MAX_MICROS, MAX_SPAN_MICROS, MIN_MICROS, shift

    times = [MIN_MICROS, MIN_MICROS + 1, -5, 0, 7, MAX_MICROS - 3, MAX_MICROS - 1, MAX_MICROS, INFINITY_MICROS, None]
    moves = [0, 1, -1, 3, -3, MAX_SPAN_MICROS, -MAX_SPAN_MICROS, MAX_SPAN_MICROS - 1, -(MAX_SPAN_MICROS - 1),
             MAX_MICROS - 10, -(MAX_MICROS - 10), 10**18, -10**18]
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        df = spark.createDataFrame([(t, d) for t in times for d in moves], "t long, d long")
        by_literal = [F.when(F.col("d") == F.lit(d), shifted(F.col("t"), d)) for d in moves]
        rows = df.select("t", "d", F.coalesce(*by_literal).alias("by_literal"),
                         shifted(F.col("t"), F.col("d")).alias("by_column")).collect()
    finally:
        if before is None:
            spark.conf.unset("spark.sql.ansi.enabled")
        else:
            spark.conf.set("spark.sql.ansi.enabled", before)
    assert len(rows) == len(times) * len(moves)
    for r in rows:
        expected = MIN_MICROS if r.t is None else shift(r.t, r.d)
        assert (r.by_literal, r.by_column) == (expected, expected), (r.t, r.d)
